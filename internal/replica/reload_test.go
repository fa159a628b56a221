package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// jobsYAML declares exec jobs named names, each ticking every second.
func jobsYAML(names ...string) string {
	var b strings.Builder
	b.WriteString("jobs:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    schedule: \"@every 1s\"\n    exec:\n      command: [\"true\"]\n", n)
	}
	return b.String()
}

// recordTimes lists the scheduled_at of a job's finished runs.
func (r *testReplica) recordTimes(job string) []time.Time {
	r.t.Helper()
	recs, err := r.api.Runs(context.Background(), job, 1000, "")
	if err != nil {
		r.t.Fatal(err)
	}
	var out []time.Time
	for _, rec := range recs {
		out = append(out, rec.ScheduledAt)
	}
	return out
}

func (r *testReplica) memberHash(id string) string {
	r.t.Helper()
	ms, err := r.api.Members(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, m := range ms {
		if m.ID == id {
			return m.ConfigHash
		}
	}
	return ""
}

// SIGHUP with a valid changed file: the new job appears and runs, the
// removed one disappears and stops running, and the config hash changes on
// /api/v1/status and /api/v1/members. The watcher is off, so SIGHUP alone
// did it.
func TestReloadOnSIGHUP(t *testing.T) {
	etcd := etcdtest.Start(t)
	endpoint := etcd.Endpoints()[0]
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	writeFile(t, path, etcdtest.Config(endpoint, "/hup/", jobsYAML("old", "kept")))
	r := startReplica(t, "h1", path, noWatch)
	poll.Until(t, 20*time.Second, "old runs", func() (bool, string) {
		n := len(r.recordTimes("old"))
		return n >= 1, fmt.Sprint(n, " runs")
	})
	before := r.status().ConfigHash

	writeFile(t, path, etcdtest.Config(endpoint, "/hup/", jobsYAML("kept", "new")))
	r.sighup()
	poll.Until(t, 10*time.Second, "config hash changes", func() (bool, string) {
		st := r.status()
		return st.ConfigHash != before && r.memberHash("h1") == st.ConfigHash,
			fmt.Sprintf("status %s, member %s, before %s", st.ConfigHash, r.memberHash("h1"), before)
	})
	reloadedAt := time.Now()
	if got := r.jobNames(); !slices.Equal(got, []string{"kept", "new"}) {
		t.Errorf("jobs after reload: %v, want [kept new]", got)
	}
	if _, err := r.api.Job(context.Background(), "old"); statusOf(err) != http.StatusNotFound {
		t.Errorf("GET /api/v1/jobs/old after reload: %v, want 404", err)
	}
	if got := r.metric(`scheduler_config_reloads_total{result="success"}`); got != 1 {
		t.Errorf("reloads success = %v, want 1", got)
	}

	// The new job runs three times; by then the old one, if it were still
	// scheduled, would have had ticks past the lookahead.
	poll.Until(t, 20*time.Second, "new job runs", func() (bool, string) {
		n := len(r.recordTimes("new"))
		return n >= 4, fmt.Sprint(n, " runs")
	})
	// Ticks within the leader's lookahead (2s) may already have been queued
	// before the reload; nothing later. The API no longer knows the job, so
	// its records are read from etcd.
	resp, err := etcd.Client().Get(t.Context(), "/hup/runs/old/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatal("no records of the old job in etcd")
	}
	for _, kv := range resp.Kvs {
		rec, err := runs.DecodeRecord(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		at := rec.ScheduledAt
		if at.After(reloadedAt.Add(3 * time.Second)) {
			t.Errorf("old job ran for tick %s, after the reload at %s", at, reloadedAt)
		}
	}
}

// An invalid file is refused: the error, with FILE:LINE:COL, shows on
// /api/v1/status, in a log line and in the metric, and the old jobs keep
// running. A valid file afterwards clears the error.
func TestReloadInvalidKeepsOld(t *testing.T) {
	endpoint := newEtcd(t)
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	good := etcdtest.Config(endpoint, "/bad/", jobsYAML("tick"))
	writeFile(t, path, good)
	r := startReplica(t, "b1", path, noWatch)
	before := r.status().ConfigHash

	bad := strings.Replace(good, `"@every 1s"`, `"0 2 * *"`, 1)
	writeFile(t, path, bad)
	r.sighup()
	wantErr := path + ":11:15: jobs[0] \"tick\": schedule: expected 5 or 6 fields, got 4"
	poll.Until(t, 10*time.Second, "reload error on status", func() (bool, string) {
		st := r.status()
		return st.LastReloadError != "", "no error yet"
	})
	st := r.status()
	if st.LastReloadError != wantErr {
		t.Errorf("last_reload_error = %q, want %q", st.LastReloadError, wantErr)
	}
	if st.ConfigHash != before {
		t.Errorf("config hash changed to %s on an invalid file", st.ConfigHash)
	}
	if got := r.metric(`scheduler_config_reloads_total{result="error"}`); got != 1 {
		t.Errorf("reloads error = %v, want 1", got)
	}
	if rec := r.logs.Find("config reload refused; the previous config keeps running"); rec == nil || !strings.Contains(fmt.Sprint(rec["err"]), wantErr) {
		t.Errorf("log line for the refused reload: %v", rec)
	}
	if got := r.jobNames(); !slices.Equal(got, []string{"tick"}) {
		t.Errorf("jobs after a refused reload: %v", got)
	}
	n := len(r.recordTimes("tick"))
	poll.Until(t, 20*time.Second, "tick keeps running", func() (bool, string) {
		m := len(r.recordTimes("tick"))
		return m >= n+2, fmt.Sprintf("%d runs, had %d", m, n)
	})

	writeFile(t, path, good+"# fixed\n")
	r.sighup()
	poll.Until(t, 10*time.Second, "error cleared", func() (bool, string) {
		st := r.status()
		return st.LastReloadError == "", st.LastReloadError
	})
}

// A Kubernetes ConfigMap update swaps the mount's ..data symlink
// atomically; the file path (a symlink through ..data) never changes. The
// replica reloads without a signal, and only when the content changed.
func TestReloadConfigMapSwap(t *testing.T) {
	endpoint := newEtcd(t)
	dir := t.TempDir()
	generation := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "jobs.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// swap points ..data at name the way the kubelet does: a new symlink
	// renamed over the old one.
	swap := func(name string) {
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	generation("..2026_a", etcdtest.Config(endpoint, "/cm/", jobsYAML("first")))
	swap("..2026_a")
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.Symlink(filepath.Join("..data", "jobs.yaml"), path); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "c1", path)
	before := r.status().ConfigHash

	generation("..2026_b", etcdtest.Config(endpoint, "/cm/", jobsYAML("first", "second")))
	swap("..2026_b")
	if err := os.RemoveAll(filepath.Join(dir, "..2026_a")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "reload after the swap", func() (bool, string) {
		got := r.jobNames()
		return slices.Equal(got, []string{"first", "second"}), fmt.Sprint(got)
	})
	if st := r.status(); st.ConfigHash == before || st.LastReloadError != "" {
		t.Errorf("status after the swap: %+v", st)
	}
	if got := r.metric(`scheduler_config_reloads_total{result="success"}`); got != 1 {
		t.Errorf("reloads success = %v, want 1", got)
	}

	// Same content in a new generation: no reload. Then a change: one more.
	generation("..2026_c", etcdtest.Config(endpoint, "/cm/", jobsYAML("first", "second")))
	swap("..2026_c")
	generation("..2026_d", etcdtest.Config(endpoint, "/cm/", jobsYAML("third")))
	swap("..2026_d")
	poll.Until(t, 10*time.Second, "reload after the second swap", func() (bool, string) {
		got := r.jobNames()
		return slices.Equal(got, []string{"third"}), fmt.Sprint(got)
	})
	if got := r.metric(`scheduler_config_reloads_total{result="success"}`); got != 2 {
		t.Errorf("reloads success = %v, want 2 (unchanged content is no reload)", got)
	}
	if got := r.metric(`scheduler_config_reloads_total{result="error"}`); got != 0 {
		t.Errorf("reloads error = %v, want 0", got)
	}
}

// An editor's save (a new file renamed over the old one) reloads without a
// signal; an invalid save is refused the same way as on SIGHUP.
func TestReloadOnFileEdit(t *testing.T) {
	endpoint := newEtcd(t)
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	writeFile(t, path, etcdtest.Config(endpoint, "/edit/", jobsYAML("one")))
	r := startReplica(t, "e1", path)

	writeFile(t, path, "jobs: [")
	poll.Until(t, 10*time.Second, "invalid edit refused", func() (bool, string) {
		st := r.status()
		return strings.HasPrefix(st.LastReloadError, path+":"), st.LastReloadError
	})
	if got := r.jobNames(); !slices.Equal(got, []string{"one"}) {
		t.Errorf("jobs after an invalid edit: %v", got)
	}
	// Written in place this time, as `cat > file` does.
	if err := os.WriteFile(path, []byte(etcdtest.Config(endpoint, "/edit/", jobsYAML("one", "two"))), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "valid edit applied", func() (bool, string) {
		got := r.jobNames()
		return slices.Equal(got, []string{"one", "two"}), fmt.Sprint(got)
	})
	var st map[string]any
	if err := json.Unmarshal(r.status().Raw, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st["last_reload_error"]; ok {
		b, _ := json.Marshal(st)
		t.Errorf("error still shown after a valid edit: %s", b)
	}
}
