package worker

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
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

// The runs of a chunk shed together log one line at info, naming how
// many, and each at debug: at twice the ceiling a line a shed run cost a
// replica a third of recording them.
func TestAChunkShedTogetherLogsOneLine(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	names := []string{"s1", "s2", "s3"}
	var jobs []config.Job
	for _, n := range names[1:] {
		jobs = append(jobs, jobstest.HTTPJob(n, "@every 1s", "http://127.0.0.1:1/"))
	}
	tw := startTestWorker(t, "/lean-shedlog/", jobstest.HTTPJob(names[0], "@every 1s", "http://127.0.0.1:1/"), noExecutor{},
		testWorkerOptions{jobs: jobs, log: log})
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, names...)
	for _, n := range names {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(n, at)); rec.Outcome != runs.Missed {
			t.Fatalf("%s: recorded %s %q, want missed", n, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, `"msg":"run not started"`); n != 0 {
		t.Errorf("%d lines a run at info for a chunk shed together, want none:\n%s", n, out)
	}
	if n := strings.Count(out, `"msg":"runs not started","runs":3`); n != 1 {
		t.Errorf("%d lines naming the chunk's 3 runs, want 1:\n%s", n, out)
	}
}

// lockedWriter serializes a log handler's writes into w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
