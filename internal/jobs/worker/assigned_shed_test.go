package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// A worker behind sheds: an assigned run taken up more than a second late
// while a newer tick of its job is due is recorded missed (catch_up:
// latest runs the newest), so the newest ticks start on time; a job with
// catch_up: all, or whose next tick is not due yet, still runs late.
func TestALateAssignedRunIsShedWhenANewerTickOfItsJobIsDue(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	every := func(name string) config.Job { return jobstest.Job(name, "@every 1s") }
	all := every("all")
	all.CatchUp = config.CatchUpAll
	tw := startTestWorker(t, "/lean-shed/", every("behind"), exec,
		testWorkerOptions{jobs: []config.Job{all, job("hourly")}})
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "behind", "all", "hourly")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("behind", at))
	if rec.Outcome != runs.Missed || !strings.Contains(rec.Error, "catch_up: latest runs the newest") {
		t.Errorf("behind: recorded %s %q, want missed: superseded by its newer tick", rec.Outcome, rec.Error)
	}
	for _, name := range []string{"all", "hourly"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)); rec.Outcome != runs.Succeeded {
			t.Errorf("%s: recorded %s %q, want succeeded (late, but not superseded)", name, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	if n := exec.runs.Load(); n != 2 {
		t.Errorf("%d runs executed, want 2", n)
	}
}

// A worker with no room under max_parallel records an assignment's
// superseded runs missed at once, not when a place frees: the places go
// to the newest ticks.
func TestAWorkerWithNoRoomShedsALateAssignmentAtOnce(t *testing.T) {
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	every := jobstest.HTTPJob("behind", "@every 1s", "http://127.0.0.1:1/")
	tw := startTestWorker(t, "/lean-noroom/", job("holds"), exec,
		testWorkerOptions{jobs: []config.Job{every}, maxParallel: 1})
	tw.assignJobs(t, tw.incarnation(t), time.Now().Add(300*time.Millisecond).UTC(), "holds")
	started(t, exec) // the only place is taken until the test releases it
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "behind")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("behind", at))
	if rec.Outcome != runs.Missed || !strings.Contains(rec.Error, "catch_up: latest runs the newest") {
		t.Errorf("behind: recorded %s %q, want missed: superseded by its newer tick", rec.Outcome, rec.Error)
	}
	close(exec.release)
	tw.waitSettled(t)
}
