package worker

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A replica killed keeps its member key for a session TTL, and each run
// ranked first to it would wait a backup's turn (250ms) meanwhile. Once
// this worker has claimed one such run at its backup turn, it passes the
// member over: the next run ranked first to it starts at its own claim
// time. The failover benchmark's jobs @every 100ms lost a tick to overlap
// after each such late run, 12-20 of 1,400 after a SIGKILL.
func TestAMemberThatLetARunPassIsPassedOver(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	tw, exec := startFakeClockWorker(t, "/passover/", jobstest.Job("one", "@every 1h"), clock)
	cli, layout, cfg, w, view := tw.cli, tw.layout, tw.cfg, tw.w, tw.view
	key := func(at time.Time) string { return layout.Entry("one", runs.ID("one", at)) + "#1" }

	// Three runs ranked to w0 (listed, dead) first, 500ms apart or more,
	// all within a session TTL (4s) of the first.
	var ats []time.Time
	for c := t0.Add(time.Second); len(ats) < 3; c = c.Add(100 * time.Millisecond) {
		if w.members.rank("w1", key(c), t0) == 1 && (len(ats) == 0 || c.Sub(ats[len(ats)-1]) >= 500*time.Millisecond) {
			ats = append(ats, c)
		}
	}
	if last := ats[2].Sub(ats[0]); last > 2*time.Second {
		t.Fatalf("the three runs span %s: over the session TTL's half", last)
	}
	for _, at := range ats {
		putEntry(t, cli, layout, queue.NewEntry(runs.ID("one", at), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule))
	}
	poll.For(t, 30*time.Second, "the worker's view of the runs", func() bool {
		for _, at := range ats {
			if view.Find(runs.ID("one", at)) == nil {
				return false
			}
		}
		return true
	})
	started := func(at time.Time, what string) {
		t.Helper()
		if run := exec.next(t, what); run.RunID != runs.ID("one", at) {
			t.Fatalf("started %s, want %s", run.RunID, runs.ID("one", at))
		}
		exec.release <- struct{}{}
		if rec := waitRecord(t, cli, layout, runs.ID("one", at)); rec.Outcome != runs.Succeeded {
			t.Fatalf("%s: %s %q", runs.ID("one", at), rec.Outcome, rec.Error)
		}
	}

	// The first: w1 claims it at its backup turn (no claim round trip
	// measured yet: Backup after the claim time).
	clock.Advance(ats[0].Add(-25*time.Millisecond + 250*time.Millisecond).Sub(t0))
	started(ats[0], "the first run did not start at w1's backup turn")
	// The second is claimed at its claim time, 25ms before it is due, and
	// starts when due: the clock is never moved to w1's backup turn.
	clock.Advance(ats[1].Add(-25 * time.Millisecond).Sub(clock.Now()))
	poll.For(t, 30*time.Second, "the second run, ranked first to the member that let the first pass, claimed at once (not at a backup's turn)", func() bool {
		for _, s := range tw.held(t) {
			if s.RunID == runs.ID("one", ats[1]) {
				return true
			}
		}
		return false
	})
	clock.Advance(25 * time.Millisecond)
	started(ats[1], "the second run, claimed, did not start when due")

	// A sign of life, w0 writing its key, ends the suspicion at once.
	w.Members().Apply([]*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(layout.Member("w0")), ModRevision: 10}}}, 10)
	if r := w.members.rank("w1", key(ats[2]), clock.Now()); r != 1 {
		t.Errorf("after w0 wrote its key, w1 ranks %d for a run ranked to w0 first, want 1", r)
	}
}

// A suspicion ends after its time, and with the member's key: passed over
// by one worker, the member takes its place again on its own.
func TestPassedOverUntilItsTime(t *testing.T) {
	layout := keys.New("/scheduler/")
	m := membersOf(layout, "a", "b", "c")
	now := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	var key string
	for i := 0; key == ""; i++ {
		k := layout.Entry("j", runs.ID("j", now.Add(time.Duration(i)*time.Second))) + "#1"
		if m.rank("a", k, now) == 0 && m.rank("b", k, now) == 1 {
			key = k
		}
	}
	if got := m.passedOver("b", key, now, now.Add(4*time.Second)); len(got) != 1 || got[0] != "a" {
		t.Fatalf("b claimed at its backup turn: passed over %v, want [a]", got)
	}
	if r := m.rank("b", key, now.Add(time.Second)); r != 0 {
		t.Errorf("within the suspicion b ranks %d, want 0", r)
	}
	if r := m.rank("a", key, now.Add(time.Second)); r != 0 {
		t.Errorf("a, passed over by others, ranks itself %d, want 0 (it claims what it can)", r)
	}
	if r := m.rank("b", key, now.Add(4*time.Second)); r != 1 {
		t.Errorf("after the suspicion b ranks %d, want 1", r)
	}
	m.passedOver("b", key, now, now.Add(4*time.Second))
	m.Apply([]*clientv3.Event{{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(layout.Member("a"))}}}, 2)
	m.Apply([]*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(layout.Member("a"))}}}, 3)
	if r := m.rank("b", key, now.Add(time.Second)); r != 1 {
		t.Errorf("a, back with a new key, is still passed over: b ranks %d, want 1", r)
	}
}
