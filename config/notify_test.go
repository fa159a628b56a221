package config

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The broken files of notifications and chains, joined to badFiles so that
// TestBadFiles checks them like every other.
var notifyBadFiles = map[string][]string{
	"testdata/after_cycle.bad.yaml": {
		`testdata/after_cycle.bad.yaml:4:18: jobs[0] "a": after.job: cycle of after: a -> c -> b -> a`,
		`testdata/after_cycle.bad.yaml:16:18: jobs[3] "self": after.job: cycle of after: self -> self`,
	},
	"testdata/after_unknown.bad.yaml": {
		`testdata/after_unknown.bad.yaml:7:18: jobs[1] "transform": after.job: unknown job "extrakt"`,
		`testdata/after_unknown.bad.yaml:11:45: jobs[2] "load": after.on[1]: unknown outcome "done": want one of succeeded, failed, timed_out, cancelled, lost, skipped, missed, interrupted`,
	},
	"testdata/notify_headers.bad.yaml": {
		`testdata/notify_headers.bad.yaml:5:21: notify.sinks[0].headers_file: cannot read "no-such-headers.yaml": no such file or directory`,
		`testdata/notify_headers.bad.yaml:8:21: notify.sinks[1].headers_file: invalid header name "X Bad Name"`,
		`testdata/notify_headers.bad.yaml:9:12: notify.max_age: must be positive, got 0s`,
	},
	"testdata/notify_sink.bad.yaml": {
		`testdata/notify_sink.bad.yaml:5:20: notify.sinks[0].on[1]: unknown event "exploded": want one of succeeded, failed, timed_out, cancelled, lost, skipped, missed, interrupted or recovered, failing, paused, overdue`,
		`testdata/notify_sink.bad.yaml:8:15: notify.sinks[1].format: invalid value "xml": want json or slack`,
		`testdata/notify_sink.bad.yaml:9:13: notify.sinks[2].name: duplicate sink name "ops" (first at line 3)`,
		`testdata/notify_sink.bad.yaml:11:13: notify.sinks[3].name: invalid sink name "On-Call": want [a-z0-9][a-z0-9._-]{0,62}`,
		`testdata/notify_sink.bad.yaml:13:18: notify.default[1]: unknown sink "pager": declare it under notify.sinks`,
		`testdata/notify_sink.bad.yaml:17:20: jobs[0] "report": notify[1]: unknown sink "email": declare it under notify.sinks`,
	},
}

func init() { maps.Copy(badFiles, notifyBadFiles) }

func TestNotifyAndAfter(t *testing.T) {
	cfg, err := Load("testdata/notify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ops := cfg.Sink("ops")
	if ops == nil || ops.Format != FormatJSON || !reflect.DeepEqual(ops.On, DefaultSinkOn) {
		t.Errorf("sink ops = %+v, want format json and the default events", ops)
	}
	want := map[string]string{"Authorization": "Bearer s3cret-token", "X-Team": "platform"}
	if !reflect.DeepEqual(ops.Headers, want) {
		t.Errorf("headers read from headers_file = %v, want %v", ops.Headers, want)
	}
	if cfg.Notify.MaxAge.D() != time.Hour {
		t.Errorf("max_age = %s, want the default 1h", cfg.Notify.MaxAge)
	}
	names := func(s []*Sink) (out []string) {
		for _, x := range s {
			out = append(out, x.Name)
		}
		return out
	}
	for job, want := range map[string][]string{"extract": {"ops"}, "transform": {"chat"}, "load": nil} {
		if got := names(cfg.SinksOf(cfg.Job(job))); !reflect.DeepEqual(got, want) {
			t.Errorf("sinks of %s = %v, want %v", job, got, want)
		}
	}
	if a := cfg.Job("transform").After; a == nil || a.Job != "extract" || !reflect.DeepEqual(a.On, []string{"succeeded"}) {
		t.Errorf("transform.after = %+v, want extract on [succeeded] (the default)", a)
	}
	if d := cfg.Downstream("extract"); len(d) != 1 || d[0].Name != "transform" {
		t.Errorf("downstream of extract = %v", d)
	}
	// The secret stays out of everything that leaves the process.
	if b := mustJSON(t, cfg); strings.Contains(b, "s3cret") {
		t.Errorf("a header value from headers_file is in the config's JSON: %s", b)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
