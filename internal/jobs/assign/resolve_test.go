package assign

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// toW2 moves every unclaimed run to w2 within a minute's starting deadline.
var toW2 = Placement{
	StartingDeadline: func(string) time.Duration { return time.Minute },
	Worker:           func(string, time.Time) string { return "w2" },
}

func (e *env) record(job string) *runs.Record {
	e.t.Helper()
	kvs := e.get(layout.Record(job, runs.ID(job, instant))).Kvs
	if len(kvs) == 0 {
		return nil
	}
	r, err := runs.DecodeRecord(kvs[0].Value)
	if err != nil {
		e.t.Fatal(err)
	}
	return &r
}

func (e *env) count(prefix string) int64 {
	e.t.Helper()
	return e.get(prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()).Count
}

// G1 with max_concurrency 2: a run the dead worker's chunk tried is
// recorded lost and never moved, so no second worker can take it into the
// job's other slot; the run it never tried moves to a live worker.
func TestResolveRecordsAClaimedRunLostAndMovesTheRest(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b")
	dead := e.lease()
	if c, err := e.claim(dead, st, 0, run("a", 0)); err != nil || c[0].Outcome != Claimed {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	e.revoke(dead)
	done, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Resolution{}
	for _, r := range done {
		got[r.Job] = r
	}
	if got["a"].Outcome != runs.Lost || got["b"].To != "w2" || len(done) != 2 {
		t.Fatalf("resolutions %+v; want a lost, b moved to w2", done)
	}
	if r := e.record("a"); r == nil || r.Outcome != runs.Lost {
		t.Fatalf("record of a: %+v, want lost", r)
	}
	moved := e.stored("w2")
	if moved.Has("a") || !moved.Has("b") {
		t.Fatalf("w2's assignment names %v; want b and not a", moved.Names())
	}
	if n := e.count(layout.WorkerAssignments("w1")) + e.count(layout.WorkerClaimed("w1")); n != 0 {
		t.Fatalf("w1 keeps %d assignment and marker keys after its resolution", n)
	}
	live := e.lease()
	c, err := e.claim(live, moved, 0, run("b", 1))
	if err != nil || c[0].Outcome != Claimed {
		t.Fatalf("w2's claim of b: %+v, %v", c, err)
	}
	if _, err := e.claim(live, st, 1, run("a", 1)); !errors.Is(err, ErrGone) {
		t.Fatalf("claim of a from w1's resolved assignment: %v, want ErrGone", err)
	}
	if held := e.slotsOf("a"); len(held) != 0 {
		t.Fatalf("lost run a holds %v", held)
	}
}

// G1: a run the dead worker's chunk tried and then handed to the queue
// path (refused at its claim: its pending entry) is left to the queue
// path: not recorded lost, not moved, so it runs and is recorded once.
func TestResolveLeavesARunHandedToTheQueuePath(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b")
	dead := e.lease()
	if c, err := e.claim(dead, st, 0, run("a", 0), run("b", 0)); err != nil || c[0].Outcome != Claimed {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	entry := layout.Entry("a", runs.ID("a", instant))
	e.put(entry, "pending")
	e.revoke(dead)
	done, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].Job != "b" || done[0].Outcome != runs.Lost {
		t.Fatalf("resolutions %+v; want only b lost", done)
	}
	if r := e.record("a"); r != nil {
		t.Fatalf("record of a: %+v, want none: its queue entry runs it", r)
	}
	if v := e.get(entry).Kvs; len(v) != 1 || string(v[0].Value) != "pending" || v[0].Version != 1 {
		t.Fatalf("a's entry after the resolution: %v, want it as the worker wrote it", v)
	}
	if n := e.count(layout.WorkerAssignments("w2")); n != 0 {
		t.Fatalf("w2 got %d assignments: a moved beside its queue entry", n)
	}
}

// G1: a worker restarted under the same id claims from its old assignment
// between the leader's read and its write: the leader's write fails (a
// marker was written since its read) and the run is not moved.
func TestResolveLosesToAClaimAfterItsRead(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "b")
	snap, err := e.store.Read(e.ctx(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := e.claim(e.lease(), st, 0, run("b", 0)); err != nil || c[0].Outcome != Claimed {
		t.Fatalf("restarted worker's claim: %+v, %v", c, err)
	}
	if _, err := e.store.Resolver().resolveSnapshot(e.ctx(), fence, snap, toW2); !errors.Is(err, ErrConflict) {
		t.Fatalf("resolution from a read older than the claim: %v, want ErrConflict", err)
	}
	if n := e.count(layout.WorkerAssignments("w2")); n != 0 {
		t.Fatalf("the claimed run was moved to w2 too")
	}
	if held := e.slotsOf("b"); len(held) != 1 {
		t.Fatalf("run b holds %v, want one slot", held)
	}
}

// G1: when the resolution comes first, the restarted worker's claim from
// the old assignment fails wholly and only w2 runs the tick.
func TestResolveBeforeAClaimWins(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "b")
	if _, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.claim(e.lease(), st, 0, run("b", 0)); !errors.Is(err, ErrGone) {
		t.Fatalf("restarted worker's claim after the move: %v, want ErrGone", err)
	}
	moved := e.stored("w2")
	if c, err := e.claim(e.lease(), moved, 0, run("b", 1)); err != nil || c[0].Outcome != Claimed {
		t.Fatalf("w2's claim: %+v, %v", c, err)
	}
	if held := e.slotsOf("b"); len(held) != 1 {
		t.Fatalf("run b holds %v, want one slot", held)
	}
}

// G1 under a real race: a worker restarted under the same id (member key,
// then a claim from its old assignment) against the leader's resolution.
// Exactly one wins: the claim, or the move to w2.
func TestResolveRacingARestartedWorkerHasOneWinner(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	wins := map[bool]int{}
	for i := range 20 {
		worker, job := fmt.Sprintf("w1-%d", i), fmt.Sprintf("job-%d", i)
		st := e.authorize(fence, worker, job)
		var claimErr, resolveErr error
		var claims []Claim
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, resolveErr = e.store.Resolver().Resolve(e.ctx(), fence, worker, toW2)
		}()
		go func() {
			defer wg.Done()
			lease, err := e.cli.Grant(e.ctx(), 60)
			if err == nil {
				_, err = e.cli.Put(e.ctx(), layout.Member(worker), "", clientv3.WithLease(lease.ID))
			}
			if err != nil {
				claimErr = err
				return
			}
			claims, claimErr = e.claim(lease.ID, st, 0, run(job, 0))
		}()
		wg.Wait()
		claimed := claimErr == nil && claims[0].Outcome == Claimed
		moved := resolveErr == nil
		if claimed == moved || !claimed && !errors.Is(claimErr, ErrGone) || !moved && !errors.Is(resolveErr, ErrAlive) {
			t.Fatalf("round %d: claim %+v, %v; resolve %v; want exactly one to win", i, claims, claimErr, resolveErr)
		}
		if moved != e.w2Has(job) {
			t.Fatalf("round %d: moved %v but w2's assignment does not say so", i, moved)
		}
		if n := len(e.slotsOf(job)); claimed && n != 1 || moved && n != 0 {
			t.Fatalf("round %d: run holds %d slots", i, n)
		}
		wins[claimed]++
	}
	t.Logf("the restarted worker won %d rounds, the resolution %d", wins[true], wins[false])
}

// w2Has reports whether one of w2's assignments names job: runs moved
// from each dead worker go to an assignment of their own.
func (e *env) w2Has(job string) bool {
	e.t.Helper()
	snap, err := e.store.Read(e.ctx(), "w2")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, st := range snap.Assignments {
		if st.Has(job) {
			return true
		}
	}
	return false
}

// A worker whose member key came back (restarted) is not resolved, even
// from a read made before it came back.
func TestResolveStopsForAWorkerBackAlive(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	e.authorize(fence, "w1", "b")
	snap, err := e.store.Read(e.ctx(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	e.put(layout.Member("w1"), "")
	if _, err := e.store.Resolver().resolveSnapshot(e.ctx(), fence, snap, toW2); !errors.Is(err, ErrConflict) {
		t.Fatalf("resolution from a read older than the member key: %v, want ErrConflict", err)
	}
	if _, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2); !errors.Is(err, ErrAlive) {
		t.Fatalf("Resolve of a live worker: %v, want ErrAlive", err)
	}
	if n := e.count(layout.WorkerAssignments("w2")); n != 0 {
		t.Fatalf("a live worker's run was moved")
	}
}

// G2: a run nobody claimed, past its starting deadline, is recorded
// missed; a record written since the leader looked is never overwritten.
func TestResolveRecordsMissedPastTheStartingDeadline(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	e.authorize(fence, "w1", "a", "b")
	e.clock.Advance(2 * time.Minute)
	snap, err := e.store.Read(e.ctx(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.store.Resolver().plan(e.ctx(), &snap.Assignments[0], toW2, snap.Revision)
	if err != nil {
		t.Fatal(err)
	}
	e.put(layout.Record("a", runs.ID("a", instant)), `{"outcome":"succeeded"}`)
	if _, err := e.store.Resolver().commitPlan(e.ctx(), fence, snap, &snap.Assignments[0], plan); !errors.Is(err, ErrConflict) {
		t.Fatalf("resolution from a read older than a record: %v, want ErrConflict", err)
	}
	if r := e.record("a"); r == nil || r.Outcome != runs.Succeeded {
		t.Fatalf("record of a: %+v, want the worker's, succeeded", r)
	}
	done, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2)
	if err != nil || len(done) != 1 || done[0].Job != "b" || done[0].Outcome != runs.Missed {
		t.Fatalf("Resolve: %+v, %v; want b missed", done, err)
	}
	if r := e.record("b"); r == nil || r.Outcome != runs.Missed {
		t.Fatalf("record of b: %+v, want missed", r)
	}
	if n := e.count(layout.WorkerAssignments("w2")); n != 0 {
		t.Fatalf("a run past its deadline was moved")
	}
}

// G1: a leader that lost its term resolves nothing.
func TestResolveByAnOldLeaderWritesNothing(t *testing.T) {
	e := newEnv(t)
	old := e.elect("a")
	st := e.authorize(old, "w1", "b")
	e.resign("a")
	if _, err := e.store.Resolver().Resolve(e.ctx(), old, "w1", toW2); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("old leader's Resolve: %v, want ErrNotLeader", err)
	}
	if again := e.stored("w1"); again.ModRevision != st.ModRevision || e.count(layout.Runs()) != 0 {
		t.Fatalf("old leader's Resolve changed w1's assignment or wrote a record")
	}
}

// A resolution whose records and follow-ups outgrow one transaction is
// written in parts: every lost run is recorded with its follow-ups, and
// the assignment goes with the last part.
func TestResolveSplitsWhatOutgrowsATransaction(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	var jobs []string
	for i := range 40 {
		jobs = append(jobs, fmt.Sprintf("j%02d", i))
	}
	st := e.authorize(fence, "w1", jobs...)
	dead := e.lease()
	var rs []Run
	for _, j := range jobs {
		rs = append(rs, run(j, 0))
	}
	if _, err := e.claim(dead, st, 0, rs...); err != nil {
		t.Fatal(err)
	}
	e.revoke(dead)
	place := toW2
	place.Follow = func(rec *runs.Record) []clientv3.Op {
		return []clientv3.Op{clientv3.OpPut(layout.Entry(rec.Job, rec.RunID), "retry"),
			clientv3.OpPut("/follow/"+rec.Job, "x"), clientv3.OpPut("/notify/"+rec.Job, "x")}
	}
	// 40 records and 120 follow-ups: over etcd's 128 writes a transaction.
	done, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", place)
	if err != nil || len(done) != len(jobs) {
		t.Fatalf("resolve: %d resolutions, %v", len(done), err)
	}
	for _, j := range jobs {
		if r := e.record(j); r == nil || r.Outcome != runs.Lost {
			t.Errorf("run of %s: record %+v, want lost", j, r)
		}
		if e.count(layout.Entry(j, runs.ID(j, instant))) != 1 {
			t.Errorf("run of %s: no follow-up written with its record", j)
		}
	}
	if n := e.count(layout.WorkerAssignments("w1")) + e.count(layout.WorkerClaimed("w1")); n != 0 {
		t.Errorf("%d keys of the dead worker left", n)
	}
}
