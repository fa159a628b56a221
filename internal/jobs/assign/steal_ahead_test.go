package assign

import (
	"errors"
	"fmt"
	"testing"
)

// G1 and G3: a backup takes over an assignment whose chunk was claimed
// ahead and not marked started. The claim's slot is freed in the same
// transaction, the backup claims the run into one slot, and the worker
// that claimed first can no longer mark the chunk started, so it never
// starts the run.
func TestATakeOverOfAChunkClaimedAheadFreesItsSlotsAndStopsItsStart(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	lease := e.member("w1")
	e.member("w2")
	c, err := e.claimAhead(lease, st, 0, run("a", 0))
	if err != nil || c[0].Outcome != Claimed {
		t.Fatalf("claim ahead: %+v, %v", c, err)
	}
	if _, err := e.store.Steal(e.ctx(), st.Assignment, st.ModRevision, "w2"); !errors.Is(err, ErrConflict) {
		t.Fatalf("Steal of an assignment claimed from: %v, want ErrConflict", err)
	}
	moved, err := e.store.StealAhead(e.ctx(), st.Assignment, st.ModRevision, "w2")
	if err != nil {
		t.Fatalf("StealAhead: %v", err)
	}
	if len(e.slotsOf("a")) != 0 || e.count(layout.WorkerClaimed("w1")) != 0 || e.count(layout.WorkerAssignments("w1")) != 0 {
		t.Fatalf("after the take-over: slots of a %v, w1's markers %d, assignments %d; want none",
			e.slotsOf("a"), e.count(layout.WorkerClaimed("w1")), e.count(layout.WorkerAssignments("w1")))
	}
	e.clock.Advance(instant.Sub(e.clock.Now()))
	if _, err := e.store.Claimer().StartChunk(e.ctx(), st.Assignment, 0, c[0].Revision, []string{"a"}); !errors.Is(err, ErrGone) {
		t.Fatalf("w1's start mark after the take-over: %v, want ErrGone", err)
	}
	cl, err := e.claim(e.lease(), moved, 0, run("a", 0), run("b", 0))
	if err != nil || cl[0].Outcome != Claimed || cl[1].Outcome != Claimed {
		t.Fatalf("w2's claim: %+v, %v", cl, err)
	}
	if len(e.slotsOf("a")) != 1 {
		t.Fatalf("run a holds %v, want one slot", e.slotsOf("a"))
	}
}

// A chunk marked started may have started its runs: no take-over.
func TestNoTakeOverOfAStartedChunk(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a")
	lease := e.member("w1")
	c, err := e.claimAhead(lease, st, 0, run("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(instant.Sub(e.clock.Now()))
	if _, err := e.store.Claimer().StartChunk(e.ctx(), st.Assignment, 0, c[0].Revision, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.StealAhead(e.ctx(), st.Assignment, st.ModRevision, "w2"); !errors.Is(err, ErrConflict) {
		t.Fatalf("StealAhead of a started chunk: %v, want ErrConflict", err)
	}
	if len(e.slotsOf("a")) != 1 {
		t.Fatalf("run a holds %v, want its one slot", e.slotsOf("a"))
	}
	if !MarkerAhead([]byte(encodeMarker([]string{"a"}, true))) || MarkerAhead([]byte(encodeMarker([]string{"a"}, false))) {
		t.Fatal("MarkerAhead does not tell the two markers apart")
	}
}

// The largest assignment a take-over accepts fits etcd's limit in the
// worst case, each run claimed ahead in a chunk of its own (a marker, a
// slot and an entry's compare a job), and one job more is refused before
// anything is read.
func TestATakeOverAtEtcdsLimit(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	n := MaxTakeOverJobs(DefaultMaxTxnOps)
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%03d", prefix, i)
		}
		return out
	}
	big := e.authorize(fence, "w0", names("x", n+1)...)
	if _, err := e.store.StealAhead(e.ctx(), big.Assignment, big.ModRevision, "w2"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("StealAhead of %d jobs: %v, want ErrTooLarge", n+1, err)
	}
	jobs := names("j", n)
	st := e.authorize(fence, "w1", jobs...)
	lease := e.member("w1")
	e.member("w2")
	for i, j := range jobs {
		if c, err := e.claimAhead(lease, st, i, run(j, 0)); err != nil || c[0].Outcome != Claimed {
			t.Fatalf("claim ahead of %s: %+v, %v", j, c, err)
		}
	}
	moved, err := e.store.StealAhead(e.ctx(), st.Assignment, st.ModRevision, "w2")
	if err != nil || len(moved.Jobs) != n {
		t.Fatalf("StealAhead of %d jobs, each claimed in a chunk: %d moved, %v; want all", n, len(moved.Jobs), err)
	}
}
