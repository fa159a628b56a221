package assign

import (
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// G1: a claim from an assignment that was moved (deleted and written
// again, here under the same key) fails wholly: no slot, no marker.
func TestClaimFromAMovedAssignmentFailsWholly(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	key := st.Key(layout)
	if _, err := e.cli.Delete(e.ctx(), key); err != nil {
		t.Fatal(err)
	}
	e.put(key, st.Encode())
	claims, err := e.claim(e.lease(), st, 0, run("a", 0), run("b", 0))
	if !errors.Is(err, ErrGone) || len(claims) != 2 || claims[0].Outcome != Gone || claims[1].Outcome != Gone {
		t.Fatalf("claim from a moved assignment = %+v, %v; want every run gone, ErrGone", claims, err)
	}
	for _, p := range []string{layout.Slots(), layout.Claimed()} {
		if n := e.get(p, clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 0 {
			t.Fatalf("a failed claim left %d keys under %s", n, p)
		}
	}
}

// G1: a run that has a record is refused, the others of its chunk are
// claimed with the request's revision as token.
func TestClaimRefusesARunWithARecord(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a", "b")
	e.put(layout.Record("a", st.RunID("a")), "{}")
	claims, err := e.claim(e.lease(), st, 0, run("a", 0), run("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	if c := claims[0]; c.Outcome != Refused || c.Reason != RecordExists {
		t.Fatalf("run with a record: %+v, want refused: record exists", c)
	}
	if len(e.slotsOf("a")) != 0 {
		t.Fatalf("run with a record holds slots %v", e.slotsOf("a"))
	}
	held := e.slotsOf("b")
	if c := claims[1]; c.Outcome != Claimed || len(held) != 1 || held[layout.Slot("b", 0)] != c.Token {
		t.Fatalf("run b: %+v, slots %v; want claimed with the slot's CreateRevision as token", c, held)
	}
}

// Fair order: while a run of the job waits in queue/<job>/, the fast path
// yields to it.
func TestClaimYieldsToARunWaitingInTheQueue(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a")
	e.put(layout.Entry("a", runs.ManualID("a", "01")), "{}")
	claims, err := e.claim(e.lease(), st, 0, run("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	if c := claims[0]; c.Outcome != Refused || c.Reason != Waiting || len(e.slotsOf("a")) != 0 {
		t.Fatalf("run with a waiter: %+v, slots %v; want refused: %s", c, e.slotsOf("a"), Waiting)
	}
}

// G1 with max_concurrency 2: a chunk sent again after its response was
// lost (same runs, same slot picks, another chunk number) takes no second
// slot and reads the first claim's token back.
func TestClaimSentTwiceTakesOneSlot(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a")
	lease := e.lease()
	first, err := e.claim(lease, st, 0, run("a", 0))
	if err != nil || first[0].Outcome != Claimed {
		t.Fatalf("first claim: %+v, %v", first, err)
	}
	for chunk := range 2 {
		again, err := e.claim(lease, st, chunk, run("a", 0))
		if err != nil || again[0].Outcome != Claimed || again[0].Token != first[0].Token {
			t.Fatalf("claim sent again as chunk %d: %+v, %v; want claimed with token %d", chunk, again, err, first[0].Token)
		}
	}
	if held := e.slotsOf("a"); len(held) != 1 || held[layout.Slot("a", 0)] != first[0].Token {
		t.Fatalf("run a holds %v, want slot 0 with token %d", held, first[0].Token)
	}
	// Another worker's lease on the same pick is refused, not read back.
	other, err := e.claim(e.lease(), st, 2, run("a", 0))
	if err != nil || other[0].Outcome != Refused || other[0].Reason != SlotTaken {
		t.Fatalf("claim under another lease: %+v, %v; want refused: slot taken", other, err)
	}
}

// A chunk too large for etcd is refused before it is sent; one at the
// limit (the marker, 124 nested transactions and the widest one's three
// compares: 128) is accepted by etcd.
func TestClaimChunkAtEtcdsLimit(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	jobs := make([]string, 126) // with the fence and the assignment: 128 compares
	for i := range jobs {
		jobs[i] = fmt.Sprintf("j%03d", i)
	}
	st := e.authorize(fence, "w1", jobs...)
	rs := make([]Run, len(jobs))
	for i, j := range jobs {
		rs[i] = run(j, 0)
	}
	claims, err := e.claim(e.lease(), st, 0, rs[:124]...)
	if err != nil || len(claims) != 124 || claims[123].Outcome != Claimed {
		t.Fatalf("chunk of 124 runs: %v", err)
	}
	_, err = e.claim(e.lease(), st, 1, rs[:125]...)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("chunk of 125 runs: %v, want ErrTooLarge", err)
	}
}

// A leader's withdrawal rewrites an assignment no chunk claimed from; a
// worker holding the version before cannot claim the withdrawn run.
func TestAClaimFromAVersionWrittenAnewFails(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b")
	rewritten := st.Assignment
	rewritten.Jobs = []Job{{Name: "b"}}
	e.put(st.Key(layout), rewritten.Encode())
	if _, err := e.claim(e.lease(), st, 0, run("a", 0)); !errors.Is(err, ErrGone) {
		t.Fatalf("claim of a withdrawn run from the version before: %v, want ErrGone", err)
	}
	if n := len(e.slotsOf("a")); n != 0 {
		t.Fatalf("the withdrawn run holds %d slots", n)
	}
}

// A claim carries no reads (each run's transaction has no Else): what
// refused a run is read afterwards, at the revision its compares saw,
// for as many refused runs as a chunk holds (three reads each: 124 runs
// take three read transactions).
func TestRefusalsAreReadAfterTheClaimAtItsRevision(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a")
	req := e.store.Claimer().runRequest(e.lease(), &st.Assignment, run("a", 0))
	if els := req.Failure; len(els) != 0 {
		t.Fatalf("a run's claim reads %d keys when refused: want none in the request", len(els))
	}

	// Read at the revision before a slot was freed, a refusal says the
	// slot was taken, as the compares saw it then.
	slot := layout.Slot("a", 0)
	put, err := e.cli.Put(e.ctx(), slot, `{"run_id":"other","started_at":"2026-11-30T10:00:00Z"}`)
	if err != nil {
		t.Fatal(err)
	}
	taken := put.Header.Revision
	if _, err := e.cli.Delete(e.ctx(), slot); err != nil {
		t.Fatal(err)
	}
	claims := []Claim{{Job: "a", RunID: st.RunID("a"), Outcome: Refused}}
	since := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	if err := e.store.Claimer().readRefusals(e.ctx(), e.lease(), taken, []Run{run("a", 0)}, claims, []int{0}); err != nil || claims[0].Reason != SlotTaken || !claims[0].Holder.StartedAt.Equal(since) {
		t.Fatalf("refusal read at revision %d: %+v, %v; want slot taken since %s", taken, claims[0], err, since)
	}

	jobs := make([]string, 124)
	rs := make([]Run, len(jobs))
	for i := range jobs {
		jobs[i] = fmt.Sprintf("j%03d", i)
		rs[i] = run(jobs[i], 0)
	}
	many := e.authorize(fence, "w2", jobs...)
	for _, j := range jobs {
		e.put(layout.Record(j, many.RunID(j)), "{}")
	}
	got, err := e.claim(e.lease(), many, 0, rs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Outcome != Refused || c.Reason != RecordExists {
			t.Fatalf("run %s of a chunk of 124 with records: %+v, want refused: record exists", c.Job, c)
		}
	}
}

// A run refused for its slot says whether a run of its job was in the
// queue then (Claim.Queued): with none, no queued elder goes first and
// the holder is a lean run, and the worker skips the run as the queue
// path would while that run holds the slot (worker/assigned_claim.go,
// skipsAtOnce).
func TestARefusalForTheSlotSaysWhetherTheJobHadARunQueued(t *testing.T) {
	e := newEnv(t)
	st := e.authorize(e.elect("a"), "w1", "a")
	e.put(layout.Slot("a", 0), `{"run_id":"a@elder","started_at":"2026-11-30T10:00:00Z"}`)
	for chunk, queued := range []bool{false, true} {
		if queued {
			e.put(layout.Entry("a", "a@elder"), "{}")
		}
		claims, err := e.claim(e.lease(), st, chunk, run("a", 0))
		if err != nil {
			t.Fatal(err)
		}
		if c := claims[0]; c.Outcome != Refused || c.Reason != SlotTaken || c.Queued != queued {
			t.Errorf("a run of the job queued %v: %+v; want refused, slot taken, Queued %v", queued, c, queued)
		}
	}
}
