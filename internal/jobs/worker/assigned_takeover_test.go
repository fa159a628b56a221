package worker

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// A peer's assignment that nobody claims from (its replica was killed and
// keeps its member key until its lease expires) is taken over by a backup
// at its turn and runs once there, on time, with no leader to resolve it.
// A peer's assignment a chunk claimed from is not taken over: its worker
// may be running those runs.
func TestABackupTakesOverAPeersUnclaimedAssignment(t *testing.T) {
	tw, exec := startCounted(t, "/lean-takeover/", testWorkerOptions{}, "a", "b", "c")
	dead := keys.Incarnation("killed", 0x1234)
	at := time.Now().Add(300 * time.Millisecond).UTC()
	claimed := tw.assignJobs(t, dead, at, "c")
	marker := tw.layout.ClaimMarker(dead, at, claimed.Group, 0)
	if _, err := tw.cli.Put(context.Background(), marker, `["c"]`); err != nil {
		t.Fatal(err)
	}
	tw.assignJobs(t, dead, at, "a", "b")
	for _, name := range []string{"a", "b"} {
		rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at))
		if rec.Outcome != runs.Succeeded || rec.Holder != "w1" {
			t.Errorf("%s: recorded %s by %q (%q), want succeeded by the backup w1", name, rec.Outcome, rec.Holder, rec.Error)
		}
		if late := rec.StartedAt.Sub(at); late > 10*time.Second {
			t.Errorf("%s started %s after it was due", name, late)
		}
	}
	poll.For(t, 30*time.Second, "the taken-over assignment deleted, the claimed one left", func() bool {
		return tw.count(t, tw.layout.Assignments()) == 1 && tw.count(t, tw.layout.Claimed()) == 1
	})
	if n := exec.runs.Load(); n != 2 {
		t.Errorf("%d runs executed, want 2", n)
	}
	if n := tw.count(t, tw.layout.Assignment(dead, at, claimed.Group)); n != 1 {
		t.Errorf("the assignment a chunk claimed from: %d keys, want it left to its worker or the leader", n)
	}
}

// An assignment that arrives overdue (moved to its worker by the leader,
// or taken over by another backup) gives its new worker a backup's turn
// from its arrival: taken over at once, it would pass from replica to
// replica, each suspecting a live peer.
func TestAnOverdueAssignmentGetsItsWorkerATurnFromItsArrival(t *testing.T) {
	tw, _ := startCounted(t, "/lean-takeover-late/", testWorkerOptions{}, "a")
	at := time.Now().Add(-2 * time.Second).UTC()
	written := time.Now()
	tw.assignJobs(t, keys.Incarnation("slow", 0x99), at, "a")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("a", at))
	if rec.Holder != "w1" || rec.Outcome != runs.Succeeded {
		t.Fatalf("recorded %s by %q (%q), want succeeded by the backup w1", rec.Outcome, rec.Holder, rec.Error)
	}
	// Backup is 250ms (worker.New's default).
	if waited := rec.StartedAt.Sub(written); waited < 250*time.Millisecond {
		t.Errorf("taken over %s after it was written, before its worker's turn of 250ms", waited)
	}
}

// A peer that claims is alive: one behind (its assignment due and not
// claimed from, while it writes markers for others) keeps its work; a
// silent one loses it.
func TestABackupLeavesABusyPeersAssignments(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	clock := clockwork.NewFakeClockAt(time.Now().Truncate(time.Second))
	tw := startTestWorker(t, "/lean-takeover-busy/", job("a"), exec,
		testWorkerOptions{clock: clock, jobs: []config.Job{job("b")}})
	busy, silent := keys.Incarnation("busy", 0x1), keys.Incarnation("silent", 0x2)
	at := clock.Now().Add(time.Second).UTC()
	tw.assignJobs(t, busy, at, "a")
	tw.assignJobs(t, silent, at, "b")
	poll.For(t, 30*time.Second, "the view of both peers' assignments", func() bool {
		tw.w.runner.mover.peers.mu.Lock()
		defer tw.w.runner.mover.peers.mu.Unlock()
		return len(tw.w.runner.mover.peers.all) == 2
	})
	// Just after a's instant (before a fifth of Backup, when a silent
	// worker's assignment is taken over), busy claims from another
	// assignment of its own.
	clock.Advance(1010 * time.Millisecond)
	if _, err := tw.cli.Put(context.Background(), tw.layout.ClaimMarker(busy, at.Add(time.Second), "other", 0), `["x"]`); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the view of busy's claim", func() bool {
		tw.w.runner.mover.peers.mu.Lock()
		defer tw.w.runner.mover.peers.mu.Unlock()
		return !tw.w.runner.mover.peers.active[busy].IsZero()
	})
	clock.Advance(2 * time.Second) // past every backup's turn
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("b", at)); rec.Holder != "w1" {
		t.Fatalf("b: recorded %s by %q (%q), want the backup w1", rec.Outcome, rec.Holder, rec.Error)
	}
	if n := tw.count(t, tw.layout.WorkerAssignments(busy)); n != 1 {
		t.Errorf("busy's assignment: %d keys, want it left to busy", n)
	}
	if n := exec.runs.Load(); n != 1 {
		t.Errorf("%d runs executed, want 1 (silent's)", n)
	}
}

// A worker with no place for a take-over does not spin on a peer's turn
// that has come: it looks again when a place frees, or a while later.
func TestAWorkerWithNoRoomDoesNotSpinOnATakeOverTurn(t *testing.T) {
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/lean-takeover-spin/", job("mine"), exec,
		testWorkerOptions{jobs: []config.Job{job("peers")}, maxParallel: 1})
	// The peer's assignment comes while the worker has room: it notes the
	// turn; its own run then takes the only place until the test releases
	// it, and the turn passes.
	at := time.Now().Add(2 * time.Second).UTC()
	tw.assignJobs(t, keys.Incarnation("killed", 0x77), at, "peers")
	poll.For(t, 30*time.Second, "the view of the peer's assignment", func() bool {
		tw.w.runner.mover.peers.mu.Lock()
		defer tw.w.runner.mover.peers.mu.Unlock()
		return len(tw.w.runner.mover.peers.all) == 1
	})
	tw.assignJobs(t, tw.incarnation(t), time.Now().Add(300*time.Millisecond).UTC(), "mine")
	started(t, exec)
	poll.For(t, 30*time.Second, "the take-over turn past", func() bool { return time.Now().After(at.Add(time.Second)) })
	from, begin := tw.w.wakes.Load(), time.Now()
	time.Sleep(time.Second) // what is measured: the loop's turns in a second of nothing to do
	// takeOverRecheck (50ms) allows 20 turns a second; the margin is for
	// the views' changes and a loaded machine's late timers.
	if n, took := tw.w.wakes.Load()-from, time.Since(begin); n > 200 {
		t.Errorf("the worker's loop turned %d times in %s with no room and a take-over turn past", n, took)
	}
	close(exec.release)
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("peers", at)); rec.Holder != "w1" {
		t.Errorf("peers: recorded %s by %q, want taken over by w1 once it had room", rec.Outcome, rec.Holder)
	}
}

// A worker killed between its claims keeps its member key and is not yet
// suspect: its next assignment is taken over a fifth of Backup after its
// instant, not a Backup after, as it wrote no claim since a claim lead
// before it. Taken over a Backup late, two ticks of a job @every 100ms
// came together and the second was skipped behind the first.
func TestASilentPeersAssignmentIsTakenOverSoonAfterItsInstant(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	clock := clockwork.NewFakeClockAt(time.Now().Truncate(time.Second))
	tw := startTestWorker(t, "/lean-takeover-silent/", job("a"), exec, testWorkerOptions{clock: clock})
	killed := keys.Incarnation("killed", 0x3)
	at := clock.Now().Add(time.Second).UTC()
	// Its last claim, of the tick before: long before a claim lead ahead
	// of at.
	if _, err := tw.cli.Put(context.Background(), tw.layout.ClaimMarker(killed, at.Add(-100*time.Millisecond), "before", 0), `["a"]`); err != nil {
		t.Fatal(err)
	}
	tw.assignJobs(t, killed, at, "a")
	poll.For(t, 30*time.Second, "the view of the peer's assignment and claim", func() bool {
		tw.w.runner.mover.peers.mu.Lock()
		defer tw.w.runner.mover.peers.mu.Unlock()
		return len(tw.w.runner.mover.peers.all) == 1 && !tw.w.runner.mover.peers.active[killed].IsZero()
	})
	// A fifth of Backup (250ms) and the round trips after the instant;
	// the clock stays there, before any Backup turn.
	clock.Advance(time.Second + 100*time.Millisecond)
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("a", at))
	if rec.Holder != "w1" || rec.Outcome != runs.Succeeded {
		t.Fatalf("a: recorded %s by %q (%q), want succeeded by the backup w1", rec.Outcome, rec.Holder, rec.Error)
	}
}

// Whether a peer's worker is silent for an assignment is judged at its
// instant from the claims seen: one that claimed from a claim lead before
// it on is alive; so is one that claimed the assignment itself ahead (at
// a burst its start marks come late, and taking its claims over loaded
// etcd until ticks were missed); one that got it late (moved, taken
// over) gets a backup's turn from its arrival whatever it claimed.
func TestAPeerIsSilentWhenItClaimedNothingSinceAClaimLeadBefore(t *testing.T) {
	layout := keys.New("/silent/")
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	lead := 25 * time.Millisecond
	v := newPeerView(layout, clock, "self", lead, func() {})
	at := t0.Add(time.Second)
	putValue := func(key, value string) *clientv3.Event {
		return &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), ModRevision: 1}}
	}
	put := func(key string) *clientv3.Event { return putValue(key, `["j"]`) }
	dead, alive, moved, ahead := keys.Incarnation("dead", 1), keys.Incarnation("alive", 2), keys.Incarnation("moved", 3), keys.Incarnation("ahead", 4)
	v.Apply([]*clientv3.Event{put(layout.Assignment(dead, at, "g")), put(layout.Assignment(alive, at, "g")), put(layout.Assignment(ahead, at, "g"))}, 1)
	// Before the instant: claims of the ticks before, the alive one's
	// within a claim lead of at.
	clock.Advance(900 * time.Millisecond)
	// ahead claimed at's assignment then, before a claim lead, and
	// nothing since.
	v.Markers().Apply([]*clientv3.Event{put(layout.ClaimMarker(dead, at.Add(-100*time.Millisecond), "b", 0)),
		putValue(layout.ClaimMarker(ahead, at, "g", 0), `["j","/ahead"]`)}, 2)
	clock.Advance(90 * time.Millisecond)
	v.Markers().Apply([]*clientv3.Event{put(layout.ClaimMarker(alive, at.Add(time.Second), "b", 0))}, 3)
	clock.Advance(10 * time.Millisecond) // at
	// moved's arrives at its instant's end, overdue.
	clock.Advance(time.Millisecond)
	v.Apply([]*clientv3.Event{put(layout.Assignment(moved, at, "g"))}, 4)
	clock.Advance(time.Second)
	silent := map[string]bool{}
	v.due(clock.Now(), time.Hour, func(p *peerAssignment, s bool) time.Time {
		silent[p.worker] = s
		return clock.Now().Add(time.Hour)
	})
	want := map[string]bool{dead: true, alive: false, moved: false, ahead: false}
	for w, s := range want {
		if got, ok := silent[w]; !ok || got != s {
			t.Errorf("%s: judged %v (judged at all: %v), want silent %v", w, got, ok, s)
		}
	}
}

// Changes of the peers' assignments and markers within peerScanGap of a
// scan wait for the gap's end: at a burst each is a change, and a scan
// per change read every peer assignment hundreds of times a second.
func TestPeerChangesAreScannedAtMostOncePerGap(t *testing.T) {
	layout := keys.New("/gap/")
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	v := newPeerView(layout, clock, "self", 25*time.Millisecond, func() {})
	put := func(key string) *clientv3.Event {
		return &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(`["j"]`), ModRevision: 1}}
	}
	peer, at := keys.Incarnation("peer", 1), t0.Add(-time.Second) // due already
	judged := 0
	turn := func(*peerAssignment, bool) time.Time { judged++; return clock.Now().Add(time.Hour) }
	v.Apply([]*clientv3.Event{put(layout.Assignment(peer, at, "a"))}, 1)
	v.due(clock.Now(), time.Hour, turn)
	if judged != 1 {
		t.Fatalf("first scan judged %d assignments, want 1", judged)
	}
	clock.Advance(peerScanGap / 2)
	v.Apply([]*clientv3.Event{put(layout.Assignment(peer, at, "b"))}, 2)
	due, next, _ := v.due(clock.Now(), time.Hour, turn)
	if judged != 1 || len(due) != 0 || !next.Equal(t0.Add(peerScanGap)) {
		t.Fatalf("a change within the gap: judged %d, due %d, next %v; want no scan until %v", judged, len(due), next, t0.Add(peerScanGap))
	}
	clock.Advance(peerScanGap / 2)
	v.due(clock.Now(), time.Hour, turn)
	if judged != 2 {
		t.Fatalf("at the gap's end judged %d assignments in all, want the new one judged too (2)", judged)
	}
}

// G1: a run its dead worker recorded before any chunk claimed (shed, as a
// worker behind does) is named still by the assignment a backup takes
// over, and is not run again: the claim compares the run's record
// (docs/design-shed.md, "Every claim compares its run's record"). The
// other run of it runs once.
func TestATakenOverRunItsWorkerRecordedDoesNotRunAgain(t *testing.T) {
	tw, exec := startCounted(t, "/lean-takeover-shed/", testWorkerOptions{}, "a", "b")
	dead := keys.Incarnation("killed", 0x4321)
	at := time.Now().Add(300 * time.Millisecond).UTC()
	shed := queue.NewEntry(runs.ID("a", at), tw.cfg.Job("a"), nil, at, at, 1, runs.Schedule).NotStarted(runs.Missed, at, "shed by its worker")
	put, err := tw.cli.Put(context.Background(), tw.layout.Record("a", shed.RunID), queue.EncodeRecord(&shed))
	if err != nil {
		t.Fatal(err)
	}
	tw.assignJobs(t, dead, at, "a", "b")
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("b", at)); rec.Outcome != runs.Succeeded || rec.Holder != "w1" {
		t.Errorf("b: recorded %s by %q (%q), want succeeded by the backup w1", rec.Outcome, rec.Holder, rec.Error)
	}
	poll.For(t, 30*time.Second, "the taken-over assignment settled and deleted", func() bool {
		return tw.count(t, tw.layout.Assignments()) == 0
	})
	if n := exec.runs.Load(); n != 1 {
		t.Errorf("%d runs executed, want 1 (b): a was recorded by its worker", n)
	}
	resp, err := tw.cli.Get(context.Background(), tw.layout.Record("a", shed.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != put.Header.Revision {
		t.Errorf("a's record was written again after its worker's (%d keys): want it as its worker wrote it", len(resp.Kvs))
	}
}
