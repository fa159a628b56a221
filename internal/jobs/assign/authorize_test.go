package assign

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// G1: a leader that lost its term writes nothing, even when the cursors it
// knows are still right; the new leader's window then applies once.
func TestAuthorizeByAnOldLeaderWritesNothing(t *testing.T) {
	e := newEnv(t)
	old := e.elect("a")
	e.resign("a")
	current := e.elect("b")
	w := window("w1", "a", "b")
	parts, err := e.store.Authorize(e.ctx(), old, w)
	if !errors.Is(err, ErrNotLeader) || len(parts) != 1 || parts[0].Applied {
		t.Fatalf("old leader's Authorize = %+v, %v; want nothing applied, ErrNotLeader", parts, err)
	}
	if n := e.get(testPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 1 {
		t.Fatalf("after the old leader's Authorize etcd holds %d keys, want only the new leader's election key", n)
	}
	if _, err := e.store.Authorize(e.ctx(), current, w); err != nil {
		t.Fatalf("new leader's Authorize: %v", err)
	}
	if c := e.get(layout.Cursor("a")).Kvs; len(c) != 1 || string(c[0].Value) != queue.EncodeCursor(instant) {
		t.Fatalf("cursor of a = %v, want %s", c, queue.EncodeCursor(instant))
	}
}

// G1: one leader sending the same window twice at once (a retry racing
// the original, each having ranked another worker first) authorizes the
// instant once: the cursors decide, though the assignment keys differ.
func TestAuthorizeTheSameWindowTwiceAtOnceWritesOnce(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.store.Authorize(e.ctx(), fence, window(fmt.Sprintf("w%d", i), "a", "b"))
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), ErrConflict) {
		t.Fatalf("two Authorize of one window: %v; want one applied, the other ErrConflict", errs)
	}
	if n := e.get(layout.Assignments(), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 1 {
		t.Fatalf("the instant was assigned %d times, want once", n)
	}
}

// G1: an assignment is never written over, even when the cursor compare
// passes (here: the job's cursor was deleted, as when a job is removed and
// added back within the lookahead).
func TestAuthorizeNeverRewritesAnAssignment(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	first := e.authorize(fence, "w1", "a")
	if _, err := e.cli.Delete(e.ctx(), layout.Cursor("a")); err != nil {
		t.Fatal(err)
	}
	_, err := e.store.Authorize(e.ctx(), fence, window("w1", "a"))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Authorize over an existing assignment: %v, want ErrConflict", err)
	}
	if again := e.stored("w1"); again.ModRevision != first.ModRevision {
		t.Fatalf("assignment rewritten: mod revision %d, was %d", again.ModRevision, first.ModRevision)
	}
}

// A window too large for one transaction is split into parts that each
// fit etcd's --max-txn-ops, jobs sharing an assignment kept together; a
// group that cannot fit is refused before anything is written.
func TestAuthorizeSplitsAtEtcdsLimit(t *testing.T) {
	e := newEnv(t)
	fence := e.elect("a")
	var w Window
	for i := range 7 {
		w.Assignments = append(w.Assignments, Assignment{Worker: fmt.Sprintf("w%d", i), At: instant, Group: "g"})
	}
	for i := range 300 {
		job := fmt.Sprintf("job-%03d", i)
		w.Cursors = append(w.Cursors, Cursor{Job: job, Next: instant})
		w.Assignments[i%7].Jobs = append(w.Assignments[i%7].Jobs, Job{Name: job})
	}
	parts, err := e.store.Authorize(e.ctx(), fence, w)
	if err != nil {
		t.Fatalf("Authorize of 300 jobs: %v", err)
	}
	if len(parts) < 3 {
		t.Fatalf("300 jobs in %d parts, want at least 3 under 128 compares each", len(parts))
	}
	partOf := map[string]int{}
	for i, p := range parts {
		for _, j := range p.Jobs {
			partOf[j] = i
		}
	}
	for _, a := range w.Assignments {
		for _, j := range a.Jobs {
			if partOf[j.Name] != partOf[a.Jobs[0].Name] {
				t.Fatalf("assignment of %s split over parts %d and %d", a.Worker, partOf[a.Jobs[0].Name], partOf[j.Name])
			}
		}
	}
	if n := e.get(layout.Jobs(), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 300 {
		t.Fatalf("%d cursors written, want 300", n)
	}
	if n := e.get(layout.Assignments(), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 7 {
		t.Fatalf("%d assignments written, want 7", n)
	}

	big := window("w9", bigJobs(130)...)
	for i := range big.Cursors {
		big.Cursors[i].Last = instant.Add(-1e9)
		big.Cursors[i].Next = instant
	}
	_, err = e.store.Authorize(e.ctx(), fence, big)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one assignment of 130 jobs: %v, want ErrTooLarge", err)
	}
	if n := e.get(layout.WorkerAssignments("w9"), clientv3.WithPrefix(), clientv3.WithCountOnly()).Count; n != 0 {
		t.Fatalf("a refused window wrote %d assignments", n)
	}
}

func bigJobs(n int) []string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("big-%03d", i)
	}
	return jobs
}

// A window whose assignment names a tick its cursors do not move over is
// refused before anything is written, naming the worker and the job.
func TestAuthorizeRefusesATickOutsideItsWindow(t *testing.T) {
	e := newEnv(t)
	w := window("w1", "a")
	w.Cursors[0].Next = instant.Add(-time.Second)
	w.Cursors[0].Last = instant.Add(-time.Minute)
	_, err := e.store.Authorize(e.ctx(), e.elect("a"), w)
	if err == nil || !strings.Contains(err.Error(), `assignment of worker w1 at 2026-11-25T17:00:00Z names job "a"`) {
		t.Fatalf("Authorize of a tick outside its window: %v", err)
	}
	if n := e.count(layout.Jobs()) + e.count(layout.Assignments()); n != 0 {
		t.Fatalf("a refused window wrote %d keys", n)
	}
}
