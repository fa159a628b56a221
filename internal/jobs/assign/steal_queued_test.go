package assign

import (
	"errors"
	"testing"

	"github.com/etcdsched/scheduler/internal/runs"
)

// G1: a run whose worker handed it to the queue path (a pending entry: it
// was refused at its claim, or settled there before one) stays there when
// its assignment is taken over: the new worker's assignment leaves it
// out, so it is decided once, by the queue path. Before, a stopping
// worker's hand-off moved it with the rest, and both paths recorded it
// (the fault suite's rolling upgrade: a tick recorded skipped twice). Its
// entry is left as it was; with every run queued nothing moves.
func TestATakeOverLeavesARunOnTheQueuePathThere(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		name := map[bool]string{false: "Steal", true: "StealAhead"}[ahead]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			st := e.authorize(e.elect("a"), "w1", "a", "b")
			lease := e.member("w1")
			e.member("w2")
			if ahead {
				if c, err := e.claimAhead(lease, st, 0, run("a", 0)); err != nil || c[0].Outcome != Claimed {
					t.Fatalf("claim ahead: %+v, %v", c, err)
				}
			}
			entry := layout.Entry("b", runs.ID("b", instant))
			e.put(entry, "pending")
			// Its queue run holds a slot on the owner's lease: not the
			// take-over's to free.
			slot := layout.Slot("b", 0)
			e.put(slot, `{"run_id":"`+runs.ID("b", instant)+`"}`)
			steal := e.store.Steal
			if ahead {
				steal = e.store.StealAhead
			}
			moved, err := steal(e.ctx(), st.Assignment, st.ModRevision, "w2")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !moved.Has("a") || moved.Has("b") {
				t.Fatalf("w2's assignment names %v; want a only (b is queued)", moved.Names())
			}
			if got := e.stored("w2"); got.Has("b") {
				t.Fatalf("stored: w2's assignment names %v", got.Names())
			}
			if v := e.get(entry).Kvs; len(v) != 1 || string(v[0].Value) != "pending" || v[0].Version != 1 {
				t.Fatalf("b's entry after the take-over: %v, want it as written", v)
			}
			if len(e.get(slot).Kvs) != 1 {
				t.Fatalf("the take-over freed the slot of b's queue run")
			}

			e2 := newEnv(t)
			st2 := e2.authorize(e2.elect("a"), "w1", "a", "b")
			lease2 := e2.member("w1")
			e2.member("w2")
			if ahead {
				if _, err := e2.claimAhead(lease2, st2, 0, run("a", 0)); err != nil {
					t.Fatal(err)
				}
			}
			e2.put(layout.Entry("a", runs.ID("a", instant)), "pending")
			e2.put(layout.Entry("b", runs.ID("b", instant)), "pending")
			steal2 := e2.store.Steal
			if ahead {
				steal2 = e2.store.StealAhead
			}
			if _, err := steal2(e2.ctx(), st2.Assignment, st2.ModRevision, "w2"); !errors.Is(err, ErrConflict) {
				t.Fatalf("take-over of an assignment whose every run is queued: %v, want ErrConflict", err)
			}
			if cur := e2.stored("w1"); cur.ModRevision != st2.ModRevision {
				t.Fatalf("w1's assignment changed by a take-over that moved nothing")
			}
		})
	}
}
