package replica

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A running replica exposes every metric of docs/api.md#metrics once a run has
// happened, plus the Go and process collectors, and promlint finds nothing
// in the scrape.
func TestMetricsOfSpec(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/metrics/", `jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    overdue_after: 1h
    exec:
      command: ["echo", "hello"]
  # Paused with a tick every second: the gauge says so, and no tick is
  # counted as skipped.
  - name: idle
    schedule: "@every 1s"
    paused: true
    exec:
      command: ["true"]
  # A tick every second and runs of two: every other tick is skipped.
  - name: busy
    schedule: "@every 1s"
    exec:
      command: ["sleep", "2"]
      kill_grace: 1s
`)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "m1", path)
	id := r.trigger("echo", "")
	if got := r.waitRun(id, "finished", 20*time.Second); got.Outcome != "succeeded" {
		t.Fatalf("run %s: %+v", id, got)
	}

	want := []string{
		`scheduler_is_leader 1`,
		`scheduler_leader_changes_total `,
		`scheduler_runs_total{job="echo",outcome="succeeded",team=""} 1`,
		`scheduler_run_duration_seconds_count{job="echo",team=""} 1`,
		`scheduler_schedule_lateness_seconds_count `,
		`scheduler_slots_in_use{job="echo",team=""} 0`,
		`scheduler_claim_duration_seconds_count `,
		`scheduler_runs_skipped_total{job="busy",reason="overlap",team=""} `,
		`scheduler_job_paused{job="idle",team=""} 1`,
		`scheduler_job_paused{job="echo",team=""} 0`,
		`scheduler_job_overdue{job="echo",team=""} 0`,
		`scheduler_job_last_success_timestamp_seconds{job="echo",team=""} `,
		`scheduler_session_lost_total 0`,
		`scheduler_config_reloads_total{result="error"} 0`,
		`scheduler_config_reloads_total{result="success"} 0`,
		`scheduler_watch_events_total{kind="slots"} `,
		`go_goroutines `,
		`process_cpu_seconds_total `,
	}
	var scrape []byte
	poll.Until(t, 20*time.Second, "every metric of docs/api.md#metrics", func() (bool, string) {
		text, err := r.api.Metrics(context.Background())
		if err != nil {
			return false, fmt.Sprintf("/metrics: %v", err)
		}
		scrape = []byte(text)
		for _, w := range want {
			if !hasLinePrefix(scrape, w) {
				return false, "missing " + w
			}
		}
		// The run came through the replica's watches.
		if hasLinePrefix(scrape, "scheduler_watch_events_total 0") {
			return false, "no watch event counted"
		}
		return true, ""
	})

	if hasLinePrefix(scrape, `scheduler_runs_skipped_total{job="idle"`) {
		t.Error("the paused job's ticks are counted as skips")
	}
	problems, err := promlint.New(bytes.NewReader(scrape)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func hasLinePrefix(scrape []byte, prefix string) bool {
	for _, line := range strings.Split(string(scrape), "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
