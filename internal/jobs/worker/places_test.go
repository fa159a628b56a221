package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// heldReleases holds every release until open is closed: an end etcd is
// slow to answer, as in a burst, where a replica's ends of one instant
// answer 100-160 ms after it.
type heldReleases struct {
	*slots.Semaphore
	open chan struct{}
	once sync.Once
}

func (h *heldReleases) Release(ctx context.Context, held *slots.Held, then ...clientv3.Op) error {
	<-h.open
	return h.Semaphore.Release(ctx, held, then...)
}

func (h *heldReleases) ReleaseIf(ctx context.Context, held *slots.Held, cmps []clientv3.Cmp, then ...clientv3.Op) error {
	<-h.open
	return h.Semaphore.ReleaseIf(ctx, held, cmps, then...)
}

func (h *heldReleases) let() { h.once.Do(func() { close(h.open) }) }

// With max_parallel 1, a run whose target has returned gives its place to
// the next run while its end is still being written
// (docs/design-admission.md#places). The test fails when the place is
// held until the end is answered: the second run never starts while the
// first one's release is held.
func TestARunStartsWhileAnotherRunsEndIsWritten(t *testing.T) {
	held := &heldReleases{open: make(chan struct{})}
	exec := &countingExecutor{started: make(chan string, 4)}
	tw := startTestWorker(t, "/places/", job("a"), exec, testWorkerOptions{maxParallel: 1, jobs: []config.Job{job("b")},
		wrap: func(s *slots.Semaphore) Slots { held.Semaphore = s; return held }})
	t.Cleanup(held.let) // before the worker's drain, which waits for the ends

	now := time.Now().UTC().Truncate(time.Second)
	put := func(name string) string {
		id := runs.ID(name, now)
		tw.put(t, queue.NewEntry(id, tw.cfg.Job(name), nil, now, now, 1, runs.Schedule))
		return id
	}
	first := put("a")
	select {
	case got := <-exec.started:
		if got != first {
			t.Fatalf("started %s, want %s", got, first)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start in 30s", first)
	}
	second := put("b")
	select {
	case got := <-exec.started:
		if got != second {
			t.Fatalf("started %s, want %s", got, second)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not start in 10s while the end of %s was held: its place was not given back", second, first)
	}
	held.let()
	for _, id := range []string{first, second} {
		if rec := waitRecord(t, tw.cli, tw.layout, id); rec.Outcome != runs.Succeeded {
			t.Errorf("%s: %s %q, want succeeded", id, rec.Outcome, rec.Error)
		}
	}
}
