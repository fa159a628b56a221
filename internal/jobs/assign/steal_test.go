package assign

import (
	"errors"
	"sync"
	"testing"

	"github.com/etcdsched/scheduler/internal/keys"
)

// G1: of two backups taking over one assignment at once, one wins; the
// worker it was assigned to then claims nothing from it, and the runs are
// claimed once, from the winner's assignment.
func TestOneTakeOverWinsAndTheOldWorkerClaimsNothing(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	e.member("w2")
	e.member("w3")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, to := range []string{"w2", "w3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, to)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs[0], errs[1]), ErrConflict) {
		t.Fatalf("two take-overs: %v, %v; want exactly one to win and the other ErrConflict", errs[0], errs[1])
	}
	winner := "w2"
	if errs[0] != nil {
		winner = "w3"
	}
	if n := e.count(layout.WorkerAssignments("w1")); n != 0 {
		t.Fatalf("w1 keeps %d assignments after the take-over", n)
	}
	if _, err := e.claim(e.lease(), st, 0, run("a", 0), run("b", 0)); !errors.Is(err, ErrGone) {
		t.Fatalf("w1's claim after the take-over: %v, want ErrGone", err)
	}
	moved := e.stored(winner)
	if !moved.Has("a") || !moved.Has("b") {
		t.Fatalf("%s's assignment names %v; want a and b", winner, moved.Names())
	}
	c, err := e.claim(e.lease(), moved, 0, run("a", 0), run("b", 0))
	if err != nil || c[0].Outcome != Claimed || c[1].Outcome != Claimed {
		t.Fatalf("%s's claim: %+v, %v", winner, c, err)
	}
	if len(e.slotsOf("a")) != 1 || len(e.slotsOf("b")) != 1 {
		t.Fatalf("slots a %v, b %v; want one each", e.slotsOf("a"), e.slotsOf("b"))
	}
}

// G1 with max_concurrency > 1: once a chunk of its worker claimed from an
// assignment, no backup takes it over (the worker may be running those
// runs; a second claim could take a second slot of the job).
func TestNoTakeOverOfAnAssignmentAChunkClaimedFrom(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	e.member("w2")
	if c, err := e.claim(e.lease(), st, 0, run("a", 0)); err != nil || c[0].Outcome != Claimed {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, "w2"); !errors.Is(err, ErrConflict) {
		t.Fatalf("take-over after a claim: %v, want ErrConflict", err)
	}
	if n := e.count(layout.WorkerAssignments("w2")); n != 0 {
		t.Fatalf("w2 got %d assignments", n)
	}
	if cur := e.stored("w1"); cur.ModRevision != st.ModRevision {
		t.Fatalf("w1's assignment changed: ModRevision %d, was %d", cur.ModRevision, st.ModRevision)
	}
}

// A take-over of an assignment written anew since it was read (a leader's
// withdrawal) fails: the backup read a version that no longer holds.
func TestNoTakeOverOfAnAssignmentChangedSinceRead(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	e.member("w2")
	e.put(st.Key(layout), (&Assignment{Worker: "w1", At: instant, Group: "g", Jobs: st.Jobs[:1]}).Encode())
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, "w2"); !errors.Is(err, ErrConflict) {
		t.Fatalf("take-over of a changed assignment: %v, want ErrConflict", err)
	}
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, "w1"); err == nil {
		t.Fatal("a take-over by the assignment's own worker was accepted")
	}
}

// A take-over goes only to an incarnation whose member key is on its
// lease: one not yet registered (its replica's next session, waiting out
// the lease of the one before) would claim with slots the leader cannot
// tell from a dead incarnation's, and record lost while they live.
func TestNoTakeOverToAnIncarnationNotOnItsMemberKey(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a")
	earlier := e.member("w2")
	next := keys.Incarnation("w2", int64(e.lease()))
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, next); !errors.Is(err, ErrConflict) {
		t.Fatalf("take-over to %s while w2's member key is on lease %x: %v, want ErrConflict", next, int64(earlier), err)
	}
	if n := e.count(layout.WorkerAssignments(next)); n != 0 {
		t.Fatalf("%s got %d assignments", next, n)
	}
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, keys.Incarnation("w2", int64(earlier))); err != nil {
		t.Fatalf("take-over to the incarnation on w2's member key: %v", err)
	}
}
