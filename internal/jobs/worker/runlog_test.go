package worker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A run's "run finished" line names the run and the slot it held, the
// same on both paths: an assigned run's logger is made once with all of
// them, a queued run's in two steps (runLog).
func TestBothPathsLogARunsEndWithItsSlot(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tw, _ := startCounted(t, "/runlog/", testWorkerOptions{log: log}, "lean", "queued")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "lean")
	now := time.Now().UTC()
	manual := runs.ManualID("queued", "01")
	tw.put(t, queue.NewEntry(manual, &tw.cfg.Jobs[1], nil, now, now, 1, runs.Manual))
	waitRecord(t, tw.cli, tw.layout, runs.ID("lean", at))
	waitRecord(t, tw.cli, tw.layout, manual)
	tw.waitSettled(t)

	mu.Lock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	mu.Unlock()
	seen := map[string]bool{}
	for _, l := range lines {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil || line["msg"] != "run finished" {
			continue
		}
		for _, k := range []string{"job", "run_id", "attempt", "slot", "token", "outcome"} {
			if _, ok := line[k]; !ok {
				t.Errorf("run finished without %q: %s", k, l)
			}
		}
		if tok, _ := line["token"].(float64); tok <= 0 {
			t.Errorf("run finished with token %v, want its slot's revision: %s", line["token"], l)
		}
		seen[line["job"].(string)] = true
	}
	if !seen["lean"] || !seen["queued"] {
		t.Fatalf("run finished lines for %v, want lean (assigned) and queued:\n%s", seen, strings.Join(lines, "\n"))
	}
}

// A failed run's "run finished" line says why it failed (the record's
// error), so an operator reading the log need not look the run up.
func TestAFailedRunsEndLogsItsError(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	exec := failOnceExecutor{attempts: make(chan int, 4)}
	tw := startTestWorker(t, "/runlog-fail/", job("fails"), exec, testWorkerOptions{log: log})
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "fails")
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("fails", at)); rec.Outcome != runs.Failed {
		t.Fatalf("the run ended %s, want failed", rec.Outcome)
	}
	tw.waitSettled(t)

	mu.Lock()
	defer mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil || line["msg"] != "run finished" {
			continue
		}
		if line["outcome"] != "failed" || line["error"] != "first attempt fails" {
			t.Errorf("run finished: outcome %v, error %v; want failed, first attempt fails: %s", line["outcome"], line["error"], l)
		}
		return
	}
	t.Fatalf("no run finished line:\n%s", buf.String())
}
