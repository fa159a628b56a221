package jobs

import (
	"container/heap"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// errShutdown cancels runs still going when the shutdown grace ends.
var errShutdown = errors.New("jobs: shutdown grace period over")

// worker claims pending runs and executes them; every replica has one.
type worker struct {
	e       *Engine
	cancels *cancelView

	mu       sync.Mutex
	pending  attemptHeap
	active   map[string]*activeRun // by run id: being claimed or running
	wake     chan struct{}
	wg       sync.WaitGroup
	drained  chan struct{}
	stopping bool

	claimRTT claimLatency // of this worker's claims: backups wait longer when etcd is slow
}

type activeRun struct {
	cancel context.CancelCauseFunc // set once the run holds its slot
}

func newWorker(e *Engine) *worker {
	w := &worker{e: e, active: map[string]*activeRun{}, wake: make(chan struct{}, 1), drained: make(chan struct{})}
	w.cancels = newCancelView(e.keys.CancelPrefix(), w.cancelRequested)
	e.queue.subscribe(w.onPut, nil)
	return w
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// onPut learns of a pending run from the queue view.
func (w *worker) onPut(q *queued) {
	if q.State != Pending {
		return
	}
	at := q.NotBefore.Add(-w.e.opts.ClaimLead)
	rank := w.e.members.rank(w.e.opts.ID, q.Key+"#"+strconv.Itoa(q.Attempt))
	at = at.Add(time.Duration(rank) * (w.e.opts.Backup + w.claimRTT.backupWait()))
	w.mu.Lock()
	heap.Push(&w.pending, attempt{at: at, key: q.Key, modRev: q.ModRev})
	w.mu.Unlock()
	w.signal()
}

// run dispatches attempts until ctx ends.
func (w *worker) run(ctx context.Context) error {
	timer := w.e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		w.mu.Lock()
		if len(w.pending) > 0 && len(w.active) < w.maxParallel() {
			wait = max(w.pending[0].at.Sub(w.e.clock.Now()), 0)
		}
		w.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			w.mu.Lock()
			w.stopping = true
			w.mu.Unlock()
			return nil
		case <-w.wake:
		case <-timer.Chan():
		}
		w.dispatch(ctx)
	}
}

func (w *worker) maxParallel() int {
	return max(1, w.e.opts.Config().Worker.MaxParallel)
}

func (w *worker) dispatch(ctx context.Context) {
	now := w.e.clock.Now()
	limit := w.maxParallel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && !w.pending[0].at.After(now) && len(w.active) < limit {
		a := heap.Pop(&w.pending).(attempt)
		q := w.e.queue.get(a.key)
		if q == nil || q.ModRev != a.modRev || q.State != Pending {
			continue // claimed, finished or changed since
		}
		if _, busy := w.active[q.RunID]; busy {
			continue
		}
		w.active[q.RunID] = &activeRun{}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer w.finish(q.RunID)
			w.attempt(ctx, q)
		}()
	}
}

func (w *worker) finish(runID string) {
	w.mu.Lock()
	delete(w.active, runID)
	w.mu.Unlock()
	w.signal()
}

// retryLater puts an entry back after a transient failure.
func (w *worker) retryLater(q *queued, at time.Time) {
	w.mu.Lock()
	heap.Push(&w.pending, attempt{at: at, key: q.Key, modRev: q.ModRev})
	w.mu.Unlock()
	w.signal()
}

// cancelRequested stops a run this worker holds.
func (w *worker) cancelRequested(runID, reason string) {
	w.mu.Lock()
	a := w.active[runID]
	w.mu.Unlock()
	if a != nil && a.cancel != nil {
		a.cancel(errors.New("cancelled: " + reason))
	}
}

// setCancel registers the running run's cancel func and applies a cancel
// request that arrived before it.
func (w *worker) setCancel(runID string, cancel context.CancelCauseFunc) {
	w.mu.Lock()
	if a := w.active[runID]; a != nil {
		a.cancel = cancel
	}
	w.mu.Unlock()
	if reason, ok := w.cancels.requested(runID); ok {
		cancel(errors.New("cancelled: " + reason))
	}
}

// drain waits for running runs until ctx ends, then cancels them and waits
// for their releases.
func (w *worker) drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.mu.Lock()
		for _, a := range w.active {
			if a.cancel != nil {
				a.cancel(errShutdown)
			}
		}
		w.mu.Unlock()
		<-done
	}
	close(w.drained)
}

// txnIfUnchanged applies ops if the entry is as the view saw it.
func (w *worker) txnIfUnchanged(ctx context.Context, q *queued, ops ...clientv3.Op) (bool, error) {
	resp, err := w.e.opts.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev)).
		Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

type attempt struct {
	at     time.Time
	key    string
	modRev int64
}

type attemptHeap []attempt

func (h attemptHeap) Len() int           { return len(h) }
func (h attemptHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h attemptHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *attemptHeap) Push(x any)        { *h = append(*h, x.(attempt)) }
func (h *attemptHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
