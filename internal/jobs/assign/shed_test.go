package assign

import (
	"errors"
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// chunkOf is a chunk record of jobs' ticks at instant, missed.
func chunkOf(jobs ...string) runs.ChunkRecord {
	c := runs.ChunkRecord{At: instant, EndedAt: instant.Add(2e9)}
	for _, j := range jobs {
		c.Runs = append(c.Runs, runs.ShedRun{Job: j, Outcome: runs.Missed})
	}
	return c
}

// A worker's shed puts a chunk record and takes its ticks out of the
// assignment in one transaction (docs/design-shed.md, "Writer"), and
// refuses, writing nothing, when the assignment changed since read or a
// tick in the chunk has a record or a queue entry (decided elsewhere: a
// take-over of runs its dead worker recorded). Without the per-tick
// compares, a tick was recorded twice; the last shed deletes the
// assignment.
func TestShedTakesTicksOutOfTheAssignmentOrWritesNothing(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("l1")
	st := e.authorize(fence, "w1", "a", "b", "c", "d")
	e.put(layout.Record("c", st.RunID("c")), `{"outcome":"missed"}`)
	e.put(layout.Entry("d", st.RunID("d")), `{}`)
	for _, job := range []string{"c", "d"} {
		if _, err := e.store.Shed(e.ctx(), st, chunkOf("a", job)); !errors.Is(err, ErrConflict) {
			t.Errorf("shed of a and %s, which has a record or an entry: %v, want ErrConflict", job, err)
		}
	}
	if n := e.get(layout.Shed(), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 0 {
		t.Fatalf("%d chunk records after refused sheds, want none", n)
	}
	next, err := e.store.Shed(e.ctx(), st, chunkOf("a", "b"))
	if err != nil || len(next.Jobs) == 0 {
		t.Fatalf("shed of a and b: left %v, %v", next.Names(), err)
	}
	if got := e.stored("w1"); got.ModRevision != next.ModRevision || !slices.Equal(got.Names(), []string{"c", "d"}) {
		t.Errorf("the assignment after the shed: %v at %d, want c and d at %d", got.Names(), got.ModRevision, next.ModRevision)
	}
	if _, err := e.store.Shed(e.ctx(), st, chunkOf("c")); !errors.Is(err, ErrConflict) {
		t.Errorf("a shed of the assignment as read before the last: %v, want ErrConflict", err)
	}
	for _, key := range []string{layout.Record("c", st.RunID("c")), layout.Entry("d", st.RunID("d"))} {
		if _, err := e.cli.Delete(e.ctx(), key); err != nil {
			t.Fatal(err)
		}
	}
	if last, err := e.store.Shed(e.ctx(), next, chunkOf("c", "d")); err != nil || len(last.Jobs) > 0 {
		t.Fatalf("shed of the last ticks: left %v, %v; want the assignment deleted", last.Names(), err)
	}
	if n := e.get(st.Key(layout), clientv3.WithCountOnly()).Count; n != 0 {
		t.Errorf("the assignment is still there with none of its ticks")
	}
	if n := e.get(layout.ShedAt(instant), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 2 {
		t.Errorf("%d chunk records at the instant, want the two sheds'", n)
	}
}
