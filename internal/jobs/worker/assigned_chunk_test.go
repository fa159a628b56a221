package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
)

// protocolPeers is a cluster whose every member advertises at least this
// protocol (assign.Protocol's steps), and no other lean replica.
type protocolPeers int

func (p protocolPeers) Lean() ([]string, bool) { return nil, true }

func (p protocolPeers) Every(protocol int) bool { return int(p) >= protocol }

// startShedding starts a worker of three jobs shed when late (s1-s3) and
// told, whose missed record notifies a sink, among peers, and assigns it
// their ticks of three seconds ago: each is superseded by a newer tick.
func startShedding(t *testing.T, prefix string, peers LeanPeers) (*testWorker, time.Time) {
	t.Helper()
	late := func(name string) config.Job { return jobstest.HTTPJob(name, "@every 1s", "http://127.0.0.1:1/") }
	told := late("told")
	told.Notify = []string{"ops"}
	tw := startTestWorker(t, prefix, late("s1"), noExecutor{}, testWorkerOptions{peers: peers,
		jobs:  []config.Job{late("s2"), late("s3"), told},
		sinks: []config.Sink{{Name: "ops", URL: "http://127.0.0.1:1/", Format: config.FormatJSON, On: []string{string(runs.Missed)}}}})
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "s1", "s2", "s3", "told")
	return tw, at
}

// chunkRecords are the chunk records of the ticks due at at.
func chunkRecords(t *testing.T, tw *testWorker, at time.Time) []runs.ChunkRecord {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), tw.layout.ShedAt(at), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []runs.ChunkRecord
	for _, kv := range resp.Kvs {
		c, err := runs.DecodeChunkRecord(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A worker behind, in a cluster whose every member reads chunk records,
// records the late ticks whose record causes nothing in one chunk record
// (docs/design-shed.md, "Writer"), taken out of their assignment in the
// same transaction, and no record of their own; a tick whose record
// notifies keeps its own, and the assignment, claimed from as rewritten,
// is cleaned up once that is written.
func TestLateTicksAreShedInOneChunkRecord(t *testing.T) {
	tw, at := startShedding(t, "/lean-chunk/", protocolPeers(assign.Protocol))
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("told", at)); rec.Outcome != runs.Missed {
		t.Errorf("told: recorded %s %q, want missed", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	for _, rec := range tw.soleChunk(t, at, []string{"s1", "s2", "s3"}) {
		if rec.Outcome != runs.Missed || rec.Slot != runs.NoSlot || !rec.ScheduledAt.Equal(at) {
			t.Errorf("%s's tick in the chunk record: %+v, want missed at %s with no slot", rec.Job, rec, at)
		}
	}
}

// While a member does not read chunk records (a release before
// assign.ReadsChunks, in a rolling upgrade), every shed tick keeps a
// record of its own: that member's backfill would find a tick in a chunk
// record without one, and run it again.
func TestNoChunkRecordWhileAMemberCannotReadThem(t *testing.T) {
	tw, at := startShedding(t, "/lean-chunk-gate/", protocolPeers(assign.ReadsChunks-1))
	for _, job := range []string{"s1", "s2", "s3", "told"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(job, at)); rec.Outcome != runs.Missed {
			t.Errorf("%s: recorded %s %q, want missed", job, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	if chunks := chunkRecords(t, tw, at); len(chunks) != 0 {
		t.Errorf("%d chunk records with a member that cannot read them, want none", len(chunks))
	}
}

// soleChunk checks that the ticks at at are in one chunk record, of
// jobs (sorted), none with a record of its own, and returns that chunk's
// records.
func (tw *testWorker) soleChunk(t *testing.T, at time.Time, jobs []string) []runs.Record {
	t.Helper()
	chunks := chunkRecords(t, tw, at)
	if len(chunks) != 1 {
		t.Fatalf("%d chunk records at %s, want 1", len(chunks), at)
	}
	recs := chunks[0].Records()
	var got []string
	for _, rec := range recs {
		got = append(got, rec.Job)
	}
	if slices.Sort(got); !slices.Equal(got, jobs) {
		t.Errorf("the chunk record names %v, want %v", got, jobs)
	}
	for _, name := range jobs {
		if n := tw.count(t, tw.layout.JobRuns(name)); n != 0 {
			t.Errorf("%s: %d records of its own beside its tick in the chunk record, want none", name, n)
		}
	}
	return recs
}

// pastDeadlineInAChunk is soleChunk for ticks each missed by its starting
// deadline.
func (tw *testWorker) pastDeadlineInAChunk(t *testing.T, at time.Time, jobs []string) {
	t.Helper()
	for _, rec := range tw.soleChunk(t, at, jobs) {
		if rec.Outcome != runs.Missed || !strings.Contains(rec.Error, "starting deadline") {
			t.Errorf("%s's tick in the chunk record: %s %q, want missed by its starting deadline", rec.Job, rec.Outcome, rec.Error)
		}
	}
}

// Ticks found not to start only when their claim is prepared, after they
// took their places (past a starting deadline shorter than shedAfter here;
// at twice the ceiling, superseded while they waited for a place), go in
// a chunk record as shedLate's do, and give their places back. Recorded a
// tick each, they were 1.6 % of the ticks a 4,000-job step shed
// (docs/design-shed.md, "Writer").
func TestTicksFoundLateAtTheirClaimAreShedInAChunkRecord(t *testing.T) {
	// Half a second late when taken up: shedLate keeps them (not a
	// second late), prepare finds each past its deadline.
	tw, exec, at := prepareLate(t, "/lean-chunk-prepare/", 100*time.Millisecond, 500*time.Millisecond)
	tw.waitSettled(t)
	tw.pastDeadlineInAChunk(t, at, []string{"d1", "d2", "d3"})
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
	// The chunk record deleted the assignment; the places go back after it.
	poll.Until(t, 30*time.Second, "every place given back", func() (bool, string) {
		tw.w.core.mu.Lock()
		defer tw.w.core.mu.Unlock()
		return len(tw.w.core.active) == 0, fmt.Sprintf("%d runs still hold a place", len(tw.w.core.active))
	})
}

// Ticks missed by a starting deadline shorter than the clocks' skew, found
// within it, keep records of their own (dueBeforeShed): a pause and a
// quick resume by a leader whose clock is behind plan them again, and
// only their own records keep the resumed claims from running them.
func TestTicksMissedWithinTheClockSkewKeepTheirOwnRecords(t *testing.T) {
	late := slots.MaxClockSkew - 10*time.Millisecond
	tw, exec, at := prepareLate(t, "/lean-chunk-skew/", 10*time.Millisecond, late)
	for _, name := range []string{"d1", "d2", "d3"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)); rec.Outcome != runs.Missed {
			t.Errorf("%s: recorded %s %q, want missed", name, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	if n := len(chunkRecords(t, tw, at)); n != 0 {
		t.Errorf("%d chunk records of ticks missed %s after they were due, want none", n, late)
	}
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// prepareLate starts a worker of jobs d1-d3 of starting deadline deadline
// on a fake clock and assigns it their ticks due late before its now, with
// a place for each: the claim's preparation judges them.
func prepareLate(t *testing.T, prefix string, deadline, late time.Duration) (*testWorker, *countingExecutor, time.Time) {
	t.Helper()
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	names := []string{"d1", "d2", "d3"}
	var jobs []config.Job
	for _, name := range names {
		j := job(name)
		j.StartingDeadline = config.Duration(deadline)
		jobs = append(jobs, j)
	}
	exec := &countingExecutor{started: make(chan string, 8)}
	tw := startTestWorker(t, prefix, jobs[0], exec,
		testWorkerOptions{clock: clock, jobs: jobs[1:], peers: protocolPeers(assign.Protocol), maxParallel: 4})
	at := t0.Add(-late)
	tw.assignJobs(t, tw.incarnation(t), at, names...)
	return tw, exec, at
}

// armClock is a fake clock that tells armed of every timer set for
// shedAfter past the instant (shedTimer's): the test knows the worker
// waits for lateness before it moves the clock past it.
type armClock struct {
	*clockwork.FakeClock
	armed chan struct{}
}

func (c *armClock) NewTimer(d time.Duration) clockwork.Timer {
	if d == shedAfter+time.Millisecond {
		select {
		case c.armed <- struct{}{}:
		default:
		}
	}
	return c.FakeClock.NewTimer(d)
}

// Runs refused ahead (their slots held) that find no place at their
// instant wait holding none, and those not to start once they are
// shedAfter late (past their starting deadline here) are shed in a chunk
// record too (shedWaiting).
func TestRunsWaitingForAPlaceAreShedInAChunkRecord(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := &armClock{FakeClock: clockwork.NewFakeClockAt(t0), armed: make(chan struct{}, 1)}
	waiting := []string{"w1", "w2"}
	jobs := []config.Job{job("h2")}
	for _, name := range waiting {
		j := job(name)
		j.StartingDeadline = config.Duration(500 * time.Millisecond)
		jobs = append(jobs, j)
	}
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/lean-chunk-waiting/", job("h1"), exec,
		testWorkerOptions{clock: clock, jobs: jobs, peers: protocolPeers(assign.Protocol), maxParallel: 2})
	at := t0.Add(10 * time.Second)
	a, _ := tw.refusedAhead(t, clock.FakeClock, at, waiting...)
	// Both places taken by runs due before the instant, held until the
	// test lets them end.
	tw.assignJobs(t, tw.incarnation(t), at.Add(-100*time.Millisecond), "h1", "h2")
	clock.Advance(at.Add(-100 * time.Millisecond).Sub(clock.Now()))
	exec.next(t, "h1 or h2 did not start")
	exec.next(t, "h1 or h2 did not start")
	defer close(exec.release)
	clock.Advance(at.Sub(clock.Now()))
	select {
	case <-clock.armed:
	case <-time.After(30 * time.Second):
		t.Fatal("the refused runs did not wait for a place at their instant")
	}
	clock.Advance(shedAfter + 2*time.Millisecond)
	poll.For(t, 30*time.Second, "the waiting runs' chunk record", func() bool { return len(chunkRecords(t, tw, at)) == 1 })
	tw.pastDeadlineInAChunk(t, at, waiting)
	poll.For(t, 30*time.Second, "the shed assignment's claim marker deleted", func() bool {
		return tw.count(t, tw.layout.ClaimMarker(a.Worker, a.At, a.Group, 0)) == 0
	})
}

// Runs refused for their overlap (their slots held by runs that started
// before their instant) go in a chunk record once their round is more
// than shedAfter behind their instant, as an overload's rounds are (a
// 4,000-job step recorded 1,865 such skips a tick each,
// docs/design-shed.md, "Writer"). At their instant they keep records of
// their own (dueBeforeShed): a pause then taken back by a leader whose
// clock is a little behind plans them again, and only their own records
// keep a resume's claims from running them.
func TestOverlapSkipsOfARoundBehindAreShedInAChunkRecord(t *testing.T) {
	names := []string{"o1", "o2"}
	for _, c := range []struct {
		name  string
		due   time.Duration // the instant, from now
		chunk bool
	}{
		{name: "two seconds behind", due: -2 * time.Second, chunk: true},
		{name: "at the instant", due: 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			tw, exec := startCounted(t, "/lean-chunk-overlap/", testWorkerOptions{peers: protocolPeers(assign.Protocol)}, names...)
			at := time.Now().Add(c.due).UTC()
			for _, name := range names {
				tw.holdSlotSince(t, name, name+"@earlier", at.Add(-time.Second), at.Add(-time.Second))
			}
			tw.assignJobs(t, tw.incarnation(t), at, names...)
			var recs []runs.Record
			if c.chunk {
				tw.waitSettled(t)
				recs = tw.soleChunk(t, at, names)
			} else {
				for _, name := range names {
					recs = append(recs, waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)))
				}
				tw.waitSettled(t)
				if n := len(chunkRecords(t, tw, at)); n != 0 {
					t.Errorf("%d chunk records of ticks skipped at their instant, want none", n)
				}
			}
			for _, rec := range recs {
				if want := "all 1 slots taken (overlap: skip)"; rec.Outcome != runs.Skipped || rec.Error != want {
					t.Errorf("%s: recorded %s %q, want skipped %q", rec.Job, rec.Outcome, rec.Error, want)
				}
			}
			if n := exec.runs.Load(); n != 0 {
				t.Errorf("%d runs executed, want none", n)
			}
		})
	}
}
