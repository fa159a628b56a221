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
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

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
// It is the face of its components (runner.go): the queue runner, the
// assigned runner and the core they share. It owns the loop that
// dispatches for both runners (Run), the channel that wakes it, and the
// wait group of every goroutine they start, which the drain waits for.
type Worker struct {
	d       Deps
	members *members
	// core holds the places under max_parallel and executes and ends
	// what both runners claimed (core.go).
	core *core
	// queue claims and runs the pending runs of the queue view
	// (queuerunner.go).
	queue *queueRunner
	// runner claims and runs this replica's assignments (runner.go).
	runner *assignedRunner

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
	w := &Worker{d: d, members: newMembers(d.Keys), wake: make(chan struct{}, 1), drained: make(chan struct{})}
	w.core = newCore(d, w.signal)
	w.queue = newQueueRunner(d, w.core, w.members, &w.claimRTT, &w.wg, w.signal)
	w.core.onFinish = w.queue.released // each freed place: an attempt behind it goes back to pending
	w.runner = newAssignedRunner(d, w.core, w.members, &w.claimRTT, &w.wg, w.signal)
	return w, nil
}

// Cancels is the view of cancel requests the worker acts on.
func (w *Worker) Cancels() mirror.Handler { return w.core.cancels }

// Members is the view of live replicas the worker ranks itself among.
func (w *Worker) Members() mirror.Handler { return w.members }

// Drained closes once Drain has returned.
func (w *Worker) Drained() <-chan struct{} { return w.drained }

func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run dispatches runs until ctx ends: then it stops claiming and returns.
// Runs in flight go on; Drain ends them. It learns of the runs the queue
// view holds and of every change after; it is called once.
func (w *Worker) Run(ctx context.Context) error {
	w.queue.follow()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.core.successes.Run(ctx)
	}()
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
		w.queue.unpark(changed)
		w.queue.dropKept(ctx)
		w.queue.dispatch(ctx)
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

// nextWait is how long the loop may sleep at now: until the queue
// runner's next turn (queueRunner.next), the next take-over turn or
// assignment. parked says whether runs wait for a change of the slots or
// the queue.
func (w *Worker) nextWait(now time.Time) (time.Duration, bool) {
	wait, parked := w.queue.next(now)
	if next := w.runner.next(); !next.IsZero() {
		wait = min(wait, max(next.Sub(now), 0))
	}
	return wait, parked
}

// flushWithin bounds the drain's put of the waiting last successes, as a
// shutdown bounds each of its steps (replica.StopSteps): against an etcd
// out of reach (or a client closed) the put would wait out its context,
// and the drain, and what it holds, would outlive the shutdown. A put cut
// short loses successes at most 10 s old (successes.go).
const flushWithin = 2 * time.Second

// Drain waits for running runs until ctx ends, then cancels them and waits
// for their releases, and puts the last successes that wait
// (successes.go). Call after Run returned.
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
	fctx, cancel := context.WithTimeout(context.Background(), flushWithin)
	w.core.successes.flush(fctx)
	cancel()
	close(w.drained)
}
