package assign

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// member puts worker's member key on a lease of its own and returns it:
// the worker lives until the lease is revoked.
func (e *env) member(worker string) clientv3.LeaseID {
	e.t.Helper()
	lease := e.lease()
	if _, err := e.cli.Put(e.ctx(), layout.Member(worker), "{}", clientv3.WithLease(lease)); err != nil {
		e.t.Fatal(err)
	}
	return lease
}

// resolved resolves w1 and returns what it did, by job.
func (e *env) resolved(fence clientv3.Cmp) map[string]Resolution {
	e.t.Helper()
	done, err := e.store.Resolver().Resolve(e.ctx(), fence, "w1", toW2)
	if err != nil {
		e.t.Fatal(err)
	}
	got := map[string]Resolution{}
	for _, r := range done {
		got[r.Job] = r
	}
	return got
}

// A worker killed after claiming a chunk ahead of its instant and before
// its start mark started none of its runs: the leader moves them to a live
// worker (late, not lost). Without start marks they were recorded lost.
func TestAChunkClaimedAheadAndNeverStartedIsMovedNotLost(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b")
	lease := e.member("w1")
	c, err := e.claimAhead(lease, st, 0, run("a", 0), run("b", 0))
	if err != nil || c[0].Outcome != Claimed || !c[0].Ahead {
		t.Fatalf("claim ahead: %+v, %v", c, err)
	}
	e.revoke(lease) // killed: its member key and slots go with the lease
	got := e.resolved(fence)
	if got["a"].To != "w2" || got["b"].To != "w2" {
		t.Fatalf("resolutions %+v; want a and b moved to w2", got)
	}
	if r := e.record("a"); r != nil {
		t.Fatalf("record of a: %+v; want none (moved)", r)
	}
	moved := e.stored("w2")
	if cl, err := e.claim(e.lease(), moved, 0, run("a", 0), run("b", 0)); err != nil || cl[0].Outcome != Claimed || cl[1].Outcome != Claimed {
		t.Fatalf("w2's claim of the moved runs: %+v, %v", cl, err)
	}
}

// A chunk whose start mark is written may have started its runs: a dead
// worker's started runs are recorded lost, never moved (G1).
func TestAStartedChunkOfADeadWorkerIsLost(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b")
	lease := e.member("w1")
	c, err := e.claimAhead(lease, st, 0, run("a", 0))
	if err != nil || c[0].Outcome != Claimed {
		t.Fatalf("claim ahead: %+v, %v", c, err)
	}
	e.clock.Advance(instant.Sub(e.clock.Now()))
	rev, err := e.store.Claimer().StartChunk(e.ctx(), st.Assignment, 0, c[0].Revision, []string{"a"})
	if err != nil || rev <= c[0].Revision {
		t.Fatalf("start mark: revision %d, %v", rev, err)
	}
	again, err := e.store.Claimer().StartChunk(e.ctx(), st.Assignment, 0, c[0].Revision, []string{"a"})
	if err != nil || again != rev {
		t.Fatalf("start mark sent again after a lost answer: revision %d, %v; want %d", again, err, rev)
	}
	e.revoke(lease)
	got := e.resolved(fence)
	if got["a"].Outcome != runs.Lost || got["b"].To != "w2" {
		t.Fatalf("resolutions %+v; want a lost and b (never tried) moved", got)
	}
}

// The worker and the leader never both decide a run: a start mark after
// the worker is taken for dead fails, before its resolution or after it,
// and a resolution read before a start mark fails to commit.
func TestAStartMarkAndAResolutionHaveOneWinner(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a")
	lease := e.member("w1")
	c, err := e.claimAhead(lease, st, 0, run("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := e.store.Read(e.ctx(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Claimer().StartChunk(e.ctx(), st.Assignment, 0, c[0].Revision, []string{"a"}); err != nil {
		t.Fatalf("start mark of a live worker: %v", err)
	}
	snap.Member = false
	if _, err := e.store.Resolver().resolveSnapshot(e.ctx(), fence, snap, toW2); !errors.Is(err, ErrConflict) {
		t.Fatalf("resolution read before the start mark: %v, want ErrConflict", err)
	}

	e2 := newEnv(t)
	fence2 := e2.elect("a")
	st2 := e2.authorize(fence2, "w1", "a")
	lease2 := e2.member("w1")
	c2, err := e2.claimAhead(lease2, st2, 0, run("a", 0))
	if err != nil {
		t.Fatal(err)
	}
	e2.revoke(lease2)
	if _, err := e2.store.Claimer().StartChunk(e2.ctx(), st2.Assignment, 0, c2[0].Revision, []string{"a"}); !errors.Is(err, ErrGone) {
		t.Fatalf("start mark of a dead worker: %v, want ErrGone", err)
	}
	if got := e2.resolved(fence2); got["a"].To != "w2" {
		t.Fatalf("resolution %+v; want a moved", got)
	}
	if _, err := e2.store.Claimer().StartChunk(e2.ctx(), st2.Assignment, 0, c2[0].Revision, []string{"a"}); !errors.Is(err, ErrGone) {
		t.Fatalf("start mark after the resolution: %v, want ErrGone", err)
	}
}

// Mixed versions: a marker of the commit before start marks (the plain
// list) says its runs may have started, so the leader records them lost
// as before; a marker claimed ahead reads, to that commit's decoder, as
// the same list and one name that is no job's (so its runs are taken for
// started: lost, as that commit did).
func TestMarkersAcrossARollingUpgrade(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a")
	e.put(layout.ClaimMarker("w1", instant, st.Group, 0), `["a"]`)
	if got := e.resolved(fence); got["a"].Outcome != runs.Lost {
		t.Fatalf("an old worker's claimed run: %+v, want lost", got["a"])
	}

	var old []string
	if err := json.Unmarshal([]byte(encodeMarker([]string{"a", "b"}, true)), &old); err != nil {
		t.Fatal(err)
	}
	if len(old) != 3 || old[0] != "a" || old[1] != "b" || !strings.Contains(old[2], "/") {
		t.Fatalf("an ahead marker to the old decoder: %q; want a, b and a name no job can have", old)
	}
	a := Assignment{Worker: "w1", At: instant, Group: "g", Jobs: []Job{{Name: old[2]}}}
	if a.Validate() == nil {
		t.Fatalf("%q passes as a job name", old[2])
	}
}

// Start marks written together (StartChunks) each keep their own
// compares and outcome: one chunk's marker changed (taken over) fails
// that mark alone, with ErrGone, and an invalid one fails alone before
// anything is sent; the others are written, at one revision.
func TestStartMarksTogetherKeepTheirOwnOutcomes(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	st := e.authorize(fence, "w1", "a", "b", "c")
	lease := e.member("w1")
	var revs []int64
	for chunk, job := range []string{"a", "b", "c"} {
		c, err := e.claimAhead(lease, st, chunk, run(job, 0))
		if err != nil || c[0].Outcome != Claimed {
			t.Fatalf("claim ahead of %s: %+v, %v", job, c, err)
		}
		revs = append(revs, c[0].Revision)
	}
	e.clock.Advance(instant.Sub(e.clock.Now()))
	starts := []Start{
		{Assignment: st.Assignment, Chunk: 0, Rev: revs[0], Jobs: []string{"a"}},
		{Assignment: st.Assignment, Chunk: 1, Rev: revs[1] - 1, Jobs: []string{"b"}}, // as if rewritten since
		{Assignment: st.Assignment, Chunk: 2, Rev: revs[2], Jobs: []string{"c"}},
		{Assignment: st.Assignment, Chunk: 3, Rev: 0, Jobs: []string{"d"}},
	}
	got, errs := e.store.Claimer().StartChunks(e.ctx(), starts)
	if errs[0] != nil || errs[2] != nil || got[0] <= revs[2] || got[0] != got[2] {
		t.Errorf("chunks 0 and 2: revisions %d and %d, errors %v and %v; want one revision after the claims", got[0], got[2], errs[0], errs[2])
	}
	if !errors.Is(errs[1], ErrGone) || got[1] != 0 {
		t.Errorf("chunk 1, its marker changed: %d, %v; want ErrGone", got[1], errs[1])
	}
	if errs[3] == nil || errors.Is(errs[3], ErrGone) {
		t.Errorf("chunk 3, no revision: %v; want an error of its own", errs[3])
	}
	// Sent again after a lost answer, each written mark finds itself.
	again, errs := e.store.Claimer().StartChunks(e.ctx(), []Start{starts[2], starts[0]})
	if errs[0] != nil || errs[1] != nil || again[0] != got[2] || again[1] != got[0] {
		t.Errorf("marks sent again: %v, %v; want %d and %d", again, errs, got[2], got[0])
	}
	e.revoke(lease)
	if _, errs := e.store.Claimer().StartChunks(e.ctx(), starts[:1]); !errors.Is(errs[0], ErrGone) {
		t.Errorf("a dead worker's mark: %v, want ErrGone", errs[0])
	}
}
