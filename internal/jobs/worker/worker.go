// Package worker is what every replica does with the queue: it ranks
// itself for each pending run, claims the run together with its slots in
// one transaction (docs/design.md#the-safety-rules, rule 3), applies the job's overlap policy when every
// slot is taken, executes the target under a context that ends before the
// lease can (rule 5), and releases the slots with the run's record in one
// owner-checked transaction (rule 4); it stops a run it holds when a
// cancel request for it appears (cancels.go). The worker never writes a
// fenced key.
package worker

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// errShutdown cancels runs still going when the shutdown grace ends; a run
// it cuts with on_shutdown: cancel reads its sentence (otherwise the run is
// recorded interrupted, in interruptedWhy's words).
var errShutdown error = shutdownError{}

type shutdownError struct{}

func (shutdownError) Error() string { return "worker: shutdown grace period over" }
func (shutdownError) UserMessage() string {
	return "this replica shut down and its worker.shutdown_grace ended before the run did (on_shutdown: cancel, so it is not queued again)"
}

// Worker claims pending runs and executes them; every replica has one.
type Worker struct {
	d       Deps
	writes  queue.Writes
	cancels *cancels
	members *members
	// runner claims and runs this replica's assignments (runner.go).
	runner *assignedRunner

	mu      sync.Mutex
	pending dueHeap
	active  map[string]*activeRun // by run id: being claimed or running
	parked  map[string]parkedRun  // by entry key: waiting for a limit, holding no worker
	waits   map[string]*waitState // by entry key: what waiting runs keep between attempts
	// behind holds, by run id, an attempt that came up while the run's
	// previous attempt was still active (its release queued the retry and
	// has not returned): finish sends it back to pending.
	behind map[string]due
	wake   chan struct{}
	// freed closes (and is replaced) when a run leaves active: an
	// assignment waiting for room under max_parallel looks again.
	freed    chan struct{}
	wg       sync.WaitGroup
	drained  chan struct{}
	stopping bool
	// abandon ends when the drain's grace is over: a run's end that fails
	// after that is not tried again (settle.go).
	abandon       context.Context
	abandonCancel context.CancelFunc

	// wakes counts the turns of Run's loop (a loop that spins shows here).
	wakes atomic.Int64

	claimRTT claimLatency // of this worker's claims: backups wait longer when etcd is slow
}

type activeRun struct {
	cancel context.CancelCauseFunc // set once the run holds its slot
}

// New is a worker that learns of runs from d.Queue once it runs. Its
// cancel requests and member list are views the caller mirrors (Cancels,
// Members). It reports every setting of d it cannot work with.
func New(d Deps) (*Worker, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	w := &Worker{d: d, writes: queue.Writes{Client: d.Client, Keys: d.Keys, Batch: d.Batch}, members: newMembers(d.Keys),
		active: map[string]*activeRun{}, parked: map[string]parkedRun{}, waits: map[string]*waitState{}, behind: map[string]due{},
		wake: make(chan struct{}, 1), freed: make(chan struct{}), drained: make(chan struct{})}
	w.runner = newAssignedRunner(d, w, w.members, &w.claimRTT, &w.wg, w.signal)
	w.abandon, w.abandonCancel = context.WithCancel(context.Background())
	w.cancels = newCancels(d.Keys, w.cancelRequested)
	return w, nil
}

// Cancels is the view of cancel requests the worker acts on.
func (w *Worker) Cancels() mirror.Handler { return w.cancels }

// Members is the view of live replicas the worker ranks itself among.
func (w *Worker) Members() mirror.Handler { return w.members }

// Drained closes once Drain has returned.
func (w *Worker) Drained() <-chan struct{} { return w.drained }

// follow subscribes to the queue view, then takes the pending runs it
// already holds: a run put in between comes twice, and dispatch drops the
// copy (its entry claimed or its run active by then).
func (w *Worker) follow() {
	w.d.Queue.Subscribe(w.onPut, w.onDelete)
	for _, q := range w.d.Queue.List(func(q *queue.Item) bool { return q.State == queue.Pending }) {
		w.onPut(q)
	}
}

func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// onPut learns of a pending run from the queue view. It is looked at
// first a claim lead before it is due; only then does the worker rank
// itself for it (backupAt), among the members live then: the leader
// queues ticks seconds ahead, and a rank taken at the put would still
// count a member that has left since (a replica stopped, or dead and its
// lease expired) as the run's first worker.
func (w *Worker) onPut(q *queue.Item) {
	if q.State != queue.Pending {
		return
	}
	w.mu.Lock()
	heap.Push(&w.pending, due{at: q.NotBefore.Add(-w.d.ClaimLead), key: q.Key, modRev: q.ModRev})
	w.mu.Unlock()
	w.signal()
}

// backupAt is when this worker tries q, by its rank among the live
// members: at once for its first worker, Backup (and twice the claim round
// trip) later per rank for the others.
func (w *Worker) backupAt(q *queue.Item) time.Time {
	at := q.NotBefore.Add(-w.d.ClaimLead)
	if q.Hold != nil && q.Hold.Holder == w.d.ID {
		return at // only the holder can claim with the kept slot
	}
	rank := w.members.rank(w.d.ID, rankKey(q), w.d.Clock.Now())
	return at.Add(time.Duration(rank) * (w.d.Backup + w.claimRTT.backupWait()))
}

// Run dispatches runs until ctx ends: then it stops claiming and returns.
// Runs in flight go on; Drain ends them. It learns of the runs the queue
// view holds and of every change after; it is called once.
func (w *Worker) Run(ctx context.Context) error {
	w.follow()
	timer := w.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Taken before looking at the parked runs, so a change after the
		// look wakes the loop.
		slotsChanged, queueChanged := w.d.Slots.Changed(), w.d.Queue.Changed()
		now := w.d.Clock.Now()
		wait, parked := w.nextWait(now)
		if !parked {
			slotsChanged, queueChanged = nil, nil // nobody to wake
		}
		fired := w.armUntil(timer, now.Add(wait))
		changed := false
		select {
		case <-ctx.Done():
			w.mu.Lock()
			w.stopping = true
			w.mu.Unlock()
			w.runner.mover.handBack()
			return nil
		case <-w.wake:
		case <-fired:
		case <-slotsChanged:
			changed = true
		case <-queueChanged:
			changed = true
		}
		w.wakes.Add(1)
		w.unpark(changed)
		w.dispatch(ctx)
		w.runner.dispatchAssigned(ctx)
		w.runner.mover.dispatchTakeOvers(ctx)
	}
}

// armUntil arms t for deadline and returns what to wait on: t's channel,
// or one closed already when the clock is past deadline once t is armed.
// t is armed for what is left when it is armed (the look at the work took
// some of the wait), and a clock that jumps past deadline in between (a
// test's fake clock) would leave t waiting for a later time.
func (w *Worker) armUntil(t clockwork.Timer, deadline time.Time) <-chan time.Time {
	t.Reset(max(deadline.Sub(w.d.Clock.Now()), 0))
	if !w.d.Clock.Now().Before(deadline) {
		return passed
	}
	return t.Chan()
}

// passed is a closed channel: a deadline already behind.
var passed = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// nextWait is how long the loop may sleep at now: until the first pending
// run is due (while a place is free), a parked run's turn or a change it
// waits for, the next take-over turn or assignment. parked says whether
// runs wait for a change of the slots or the queue.
func (w *Worker) nextWait(now time.Time) (time.Duration, bool) {
	wait := time.Hour
	w.mu.Lock()
	if len(w.pending) > 0 && len(w.active) < w.maxParallel() {
		wait = max(w.pending[0].at.Sub(now), 0)
	}
	for _, p := range w.parked {
		wait = min(wait, max(p.until.Sub(now), 0))
		if p.changedSince() {
			wait = 0
		}
	}
	parked := len(w.parked) > 0
	w.mu.Unlock()
	if next := w.runner.next(); !next.IsZero() {
		wait = min(wait, max(next.Sub(now), 0))
	}
	return wait, parked
}

// takePlaces implements runCore.
func (w *Worker) takePlaces(ids []string) (int, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for n < min(w.maxParallel()-len(w.active), len(ids)) {
		if _, busy := w.active[ids[n]]; busy {
			break
		}
		w.active[ids[n]] = &activeRun{}
		n++
	}
	return n, w.freed
}

// full implements runCore.
func (w *Worker) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.active) >= w.maxParallel() || w.stopping
}

func (w *Worker) maxParallel() int {
	return max(1, w.d.Config().Worker.MaxParallel)
}

func (w *Worker) dispatch(ctx context.Context) {
	now := w.d.Clock.Now()
	limit := w.maxParallel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && !w.pending[0].at.After(now) && len(w.active) < limit {
		a := heap.Pop(&w.pending).(due)
		q := w.d.Queue.Get(a.key)
		if q == nil || q.ModRev != a.modRev || q.State != queue.Pending {
			continue // claimed, finished or changed since
		}
		if _, busy := w.active[q.RunID]; busy {
			// Another attempt of the run is still ending; this one comes
			// back when it has (finish). Dropped, nothing brought it back.
			w.behind[q.RunID] = a
			continue
		}
		if !a.ranked {
			if at := w.backupAt(q); at.After(now) {
				heap.Push(&w.pending, due{at: at, key: a.key, modRev: a.modRev, ranked: true})
				continue
			}
		}
		delete(w.parked, q.Key)
		st := w.waits[q.Key]
		if st == nil {
			st = &waitState{}
			w.waits[q.Key] = st
		}
		w.active[q.RunID] = &activeRun{}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer w.finish(q.RunID)
			if until, wait := w.start(ctx, q, st); wait {
				w.park(q, st, until)
				return
			}
			w.mu.Lock()
			delete(w.waits, q.Key)
			w.mu.Unlock()
		}()
	}
}

func (w *Worker) finish(runID string) {
	w.mu.Lock()
	delete(w.active, runID)
	close(w.freed)
	w.freed = make(chan struct{})
	if a, ok := w.behind[runID]; ok {
		delete(w.behind, runID)
		heap.Push(&w.pending, a)
	}
	w.mu.Unlock()
	w.signal()
}

// cancelRequested stops a run this worker holds.
func (w *Worker) cancelRequested(runID, reason string) {
	w.mu.Lock()
	a := w.active[runID]
	w.mu.Unlock()
	if a != nil && a.cancel != nil {
		a.cancel(errors.New("cancelled: " + reason))
	}
}

// setCancel registers the running run's cancel func and applies a cancel
// request that arrived before it.
func (w *Worker) setCancel(runID string, cancel context.CancelCauseFunc) {
	w.mu.Lock()
	if a := w.active[runID]; a != nil {
		a.cancel = cancel
	}
	w.mu.Unlock()
	if reason, ok := w.cancels.Requested(runID); ok {
		cancel(errors.New("cancelled: " + reason))
	}
}

// Drain waits for running runs until ctx ends, then cancels them and waits
// for their releases. Call after Run returned.
func (w *Worker) Drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.abandonCancel()
		w.mu.Lock()
		for _, a := range w.active {
			if a.cancel != nil {
				a.cancel(errShutdown)
			}
		}
		w.mu.Unlock()
		<-done
	}
	w.abandonCancel()
	close(w.drained)
}

// onDelete forgets a run that left the queue.
func (w *Worker) onDelete(key string, _ *queue.Item) {
	w.mu.Lock()
	delete(w.parked, key)
	delete(w.waits, key)
	w.mu.Unlock()
}
