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
	members *members
	// core holds the places under max_parallel and executes and ends
	// what both runners claimed (core.go).
	core *core
	// runner claims and runs this replica's assignments (runner.go).
	runner *assignedRunner

	mu      sync.Mutex
	pending dueHeap
	parked  map[string]parkedRun  // by entry key: waiting for a limit, holding no worker
	waits   map[string]*waitState // by entry key: what waiting runs keep between attempts
	// behind holds, by run id, an attempt that came up while the run's
	// previous attempt was still active (its release queued the retry and
	// has not returned): released sends it back to pending.
	behind  map[string]due
	wake    chan struct{}
	wg      sync.WaitGroup
	drained chan struct{}

	// wakes counts the turns of Run's loop (a loop that spins shows here).
	wakes atomic.Int64

	claimRTT claimLatency // of this worker's claims: backups wait longer when etcd is slow
}

// New is a worker that learns of runs from d.Queue once it runs. Its
// cancel requests and member list are views the caller mirrors (Cancels,
// Members). It reports every setting of d it cannot work with.
func New(d Deps) (*Worker, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	w := &Worker{d: d, writes: queue.Writes{Client: d.Client, Keys: d.Keys, Batch: d.Batch}, members: newMembers(d.Keys),
		parked: map[string]parkedRun{}, waits: map[string]*waitState{}, behind: map[string]due{},
		wake: make(chan struct{}, 1), drained: make(chan struct{})}
	w.core = newCore(d, w.signal, w.released)
	w.runner = newAssignedRunner(d, w.core, w.members, &w.claimRTT, &w.wg, w.signal)
	return w, nil
}

// Cancels is the view of cancel requests the worker acts on.
func (w *Worker) Cancels() mirror.Handler { return w.core.cancels }

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
			w.core.stop()
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
	if len(w.pending) > 0 && w.core.room() {
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

// dispatch takes up the pending runs that are due while a place is free,
// each in a goroutine of its own that the drain waits for. w.mu is held
// throughout, the core's lock under it for each place: an attempt found
// busy goes to behind before the place's finish can look there.
func (w *Worker) dispatch(ctx context.Context) {
	now := w.d.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && !w.pending[0].at.After(now) && w.core.room() {
		a := heap.Pop(&w.pending).(due)
		q := w.d.Queue.Get(a.key)
		if q == nil || q.ModRev != a.modRev || q.State != queue.Pending {
			continue // claimed, finished or changed since
		}
		if w.core.busy(q.RunID) {
			// Another attempt of the run is still ending; this one comes
			// back when it has (released). Dropped, nothing brought it back.
			w.behind[q.RunID] = a
			continue
		}
		if !a.ranked {
			if at := w.backupAt(q); at.After(now) {
				heap.Push(&w.pending, due{at: at, key: a.key, modRev: a.modRev, ranked: true})
				continue
			}
		}
		taken, busy := w.core.take(q.RunID)
		switch {
		case busy:
			w.behind[q.RunID] = a // taken up since by the assigned runner
			continue
		case !taken:
			heap.Push(&w.pending, a) // the last place went to an assignment
			return
		}
		delete(w.parked, q.Key)
		st := w.waits[q.Key]
		if st == nil {
			st = &waitState{}
			w.waits[q.Key] = st
		}
		w.launch(ctx, q, st)
	}
}

// launch tries q, counted active, in a goroutine of its own: it parks
// when q cannot start yet, and gives back its place either way.
func (w *Worker) launch(ctx context.Context, q *queue.Item, st *waitState) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.core.finish(q.RunID)
		if until, wait := w.start(ctx, q, st); wait {
			w.park(q, st, until)
			return
		}
		w.mu.Lock()
		delete(w.waits, q.Key)
		w.mu.Unlock()
	}()
}

// released sends back to pending the attempt of runID that came up
// while the run was active (behind), now that its place is free.
func (w *Worker) released(runID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.behind[runID]; ok {
		delete(w.behind, runID)
		heap.Push(&w.pending, a)
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
		w.core.cut()
		<-done
	}
	w.core.abandonCancel()
	close(w.drained)
}

// onDelete forgets a run that left the queue.
func (w *Worker) onDelete(key string, _ *queue.Item) {
	w.mu.Lock()
	delete(w.parked, key)
	delete(w.waits, key)
	w.mu.Unlock()
}
