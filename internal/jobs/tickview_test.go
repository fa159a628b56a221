package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// tickFixture is a tick of job "shard" of 3 shards at 06:00 whose shards
// stand as a test writes them: entries and records as stored.
type tickFixture struct {
	t    *testing.T
	job  config.Job
	at   time.Time
	tick string
	read tickRead
}

func newTickFixture(t *testing.T) *tickFixture {
	j := config.Job{Name: "shard", Schedule: "0 * * * *", Shards: 3, Retries: config.Retries{Max: 2}}
	at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	tick := runs.ID("shard", at)
	return &tickFixture{t: t, job: j, at: at, tick: tick, read: tickRead{id: tick, job: "shard", shards: 3}}
}

// entry is shard k's entry of attempt, running on holder since started
// (zero: pending).
func (f *tickFixture) entry(k, attempt int, holder string, started time.Time) *queue.Entry {
	trigger := runs.Schedule
	if attempt > 1 {
		trigger = runs.Retry
	}
	e := queue.NewEntry(runs.ShardID(f.tick, k), &f.job, nil, f.at, f.at, attempt, trigger)
	if !started.IsZero() {
		e = e.Running(holder, k, started)
	}
	f.read.entries = append(f.read.entries, []byte(e.Encode()))
	return e
}

// record ends e with outcome after d.
func (f *tickFixture) record(e *queue.Entry, o runs.Outcome, d time.Duration, why string) {
	r := e.Finished(o, e.Slot, 7, e.StartedAt, e.StartedAt.Add(d))
	r.Error = why
	f.read.records = append(f.read.records, []byte(runs.EncodeRecord(&r)))
}

// The view of a tick while shard 2, lost with its replica, runs again as
// attempt 2 elsewhere: the shard shows its retry running (not the loss),
// one shard of three is done, and the tick says how it was made, when,
// from which first start, and its highest attempt (issue 34, items 1-2).
func TestTickViewShowsEachShardsNewestAttempt(t *testing.T) {
	f := newTickFixture(t)
	s0 := f.entry(0, 1, "r1", f.at.Add(100*time.Millisecond))
	f.record(s0, runs.Succeeded, time.Second, "")
	f.read.entries = nil
	f.entry(1, 1, "r1", f.at.Add(200*time.Millisecond))
	lost := queue.NewEntry(runs.ShardID(f.tick, 2), &f.job, nil, f.at, f.at, 1, runs.Schedule).Running("r2", 2, f.at.Add(50*time.Millisecond))
	rec := lost.Lost(9, f.at.Add(10*time.Second))
	f.read.records = append(f.read.records, []byte(runs.EncodeRecord(&rec)))
	f.entry(2, 2, "r3", f.at.Add(12*time.Second))

	st := f.read.view()
	want := []struct {
		state   string
		outcome runs.Outcome
		attempt int
	}{{"finished", runs.Succeeded, 1}, {"running", "", 1}, {"running", "", 2}}
	if len(st.Shards) != 3 {
		t.Fatalf("view: %d shards, want 3: %+v", len(st.Shards), st)
	}
	for k, w := range want {
		if s := st.Shards[k]; s.State != w.state || s.Outcome != w.outcome || s.Attempt != w.attempt {
			t.Errorf("shard %d: %+v, want %s %s attempt %d", k, s, w.state, w.outcome, w.attempt)
		}
	}
	if st.State != "running" || st.Trigger != runs.Schedule || !st.ScheduledAt.Equal(f.at) || st.Attempt != 2 || st.Outcome != "" {
		t.Errorf("tick: state %s trigger %q scheduled %v attempt %d outcome %q; want running, schedule, %v, attempt 2, no outcome",
			st.State, st.Trigger, st.ScheduledAt, st.Attempt, st.Outcome, f.at)
	}
	if want := f.at.Add(50 * time.Millisecond); !st.StartedAt.Equal(want) {
		t.Errorf("tick started %v, want the first shard's first start %v", st.StartedAt, want)
	}
	if st.Error != "" {
		t.Errorf("tick error %q while the lost shard runs again, want none", st.Error)
	}
}

// A finished tick whose shard 2 failed names that shard and its error, and
// has the times its TOOK is made of.
func TestTickViewNamesTheFailedShard(t *testing.T) {
	f := newTickFixture(t)
	var entries []*queue.Entry
	for k := range 3 {
		entries = append(entries, f.entry(k, 1, "r1", f.at.Add(time.Duration(k)*time.Second)))
	}
	f.read.entries = nil
	f.record(entries[0], runs.Succeeded, time.Second, "")
	f.record(entries[1], runs.TimedOut, time.Second, "run timed out after 1s (timeout)")
	f.record(entries[2], runs.Failed, time.Second, "exit status 3")
	end := f.at.Add(5 * time.Second)
	f.read.fanin = []byte(queue.EncodeTick(entries[2].TickRecord(3, runs.Failed, end)))

	st := f.read.view()
	if st.State != "finished" || st.Outcome != runs.Failed || !st.EndedAt.Equal(end) || !st.StartedAt.Equal(f.at) || st.Attempt != 1 {
		t.Errorf("tick: %s %s started %v ended %v attempt %d; want finished failed, %v to %v, attempt 1",
			st.State, st.Outcome, st.StartedAt, st.EndedAt, st.Attempt, f.at, end)
	}
	if want := "shard 2 failed: exit status 3 (and 1 more shard did not succeed)"; st.Error != want {
		t.Errorf("tick error %q, want %q", st.Error, want)
	}
	if strings.Contains(st.Error, "\n") {
		t.Errorf("tick error spans lines: %q", st.Error)
	}
}

// A triggered tick that has not started yet is pending, with the trigger's
// time and trigger from its entries.
func TestTickViewOfAQueuedTrigger(t *testing.T) {
	f := newTickFixture(t)
	f.tick = runs.ManualID("shard", "01J")
	f.read.id = f.tick
	for k := range 3 {
		e := queue.NewEntry(runs.ShardID(f.tick, k), &f.job, nil, f.at, f.at, 1, runs.Manual)
		f.read.entries = append(f.read.entries, []byte(e.Encode()))
	}
	st := f.read.view()
	if st.State != "pending" || st.Trigger != runs.Manual || !st.ScheduledAt.Equal(f.at) || st.Attempt != 1 || len(st.Shards) != 3 {
		t.Errorf("tick: %+v; want pending, manual, scheduled %v, attempt 1, 3 shards", st, f.at)
	}
}
