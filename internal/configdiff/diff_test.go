package configdiff

import (
	"bytes"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

func parse(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var now = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// The runs a cluster has of a job whose target changes, and of a job
// removed, are counted and told what becomes of them; a job whose runs a
// change does not touch (its schedule only) gets no such line. Secrets
// that could not be compared are said to be so.
func TestRunsTouched(t *testing.T) {
	old := parse(t, `jobs:
  - {name: a, schedule: "0 2 * * *", exec: {command: [/bin/a]}}
  - {name: b, schedule: "0 3 * * *", exec: {command: [/bin/b]}}
  - {name: c, schedule: "0 4 * * *", exec: {command: [/bin/c]}}
`)
	cur := parse(t, `jobs:
  - {name: a, schedule: "0 2 * * *", exec: {command: [/bin/a, --v2]}}
  - {name: c, schedule: "0 5 * * *", exec: {command: [/bin/c]}}
`)
	rep, err := Compare(old, cur, Options{Now: now, Window: 24 * time.Hour, Runs: map[string]RunCounts{
		"a": {Running: 1, Queued: 3}, "b": {Queued: 2}, "c": {Running: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Render(&out, rep)
	want := `job a: changed
  exec.command: ["/bin/a"] -> ["/bin/a","--v2"]
  runs now: 1 running, 3 queued: running runs finish with the old spec; scheduled ticks due more
    than 250ms ahead are planned again with the new one; manual runs and retries keep the old spec
job b: removed
  ticks in the next 24h: 1 disappear
    disappear 2026-11-28T03:00:00Z
  runs now: 0 running, 2 queued: running runs finish; its scheduled ticks are withdrawn; manual runs
    and retries still run
job c: changed
  schedule: "0 4 * * *" -> "0 5 * * *"
  ticks in the next 24h: 1 move
    move      2026-11-28T04:00:00Z -> 2026-11-28T05:00:00Z (+1h)
note: secret values were not compared: the cluster shows their fingerprints only to a client that
  sends the API token (--token-file)
differences: jobs 1 removed, 2 changed
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A sink's headers have no field anywhere; their fingerprints still show
// a change, without the value. A setting shows on one line.
func TestSinkSecretAndSetting(t *testing.T) {
	text := `notify:
  sinks: [{name: ops, url: "http://hooks/ops"}]
jobs: []
`
	old, cur := parse(t, text), parse(t, "cluster: {session_ttl: 10s}\n"+text)
	old.Notify.Sinks[0].Headers = map[string]string{"X-Hook": "one"}
	cur.Notify.Sinks[0].Headers = map[string]string{"X-Hook": "two"}
	key := []byte("k")
	rep, err := Compare(old, cur, Options{Now: now, Window: time.Hour,
		OldSecrets: old.SecretFingerprints(key), NewSecrets: cur.SecretFingerprints(key)})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Render(&out, rep)
	want := `sink ops: changed
  headers.X-Hook: changed (secret, value not shown)
setting cluster.session_ttl: "5s" -> "10s"
differences: sinks 1 changed; settings 1 changed
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
