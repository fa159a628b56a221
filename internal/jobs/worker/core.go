package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// core is what both runners run their claimed runs through (runner.go):
// the worker's places under max_parallel, a claimed run's execution
// (execute.go) and its end (settle.go), and the cancel of a run it holds
// (a cancel request, the drain).
//
// mu guards active (and each run's cancel func in it), freed, places
// and stopping, and nothing else. No lock of the
// worker's is taken under it: finish tells the queue runner of a freed
// place (onFinish) after releasing it. A runner may take mu under its own
// lock (the queue runner does): mu is always the last taken.
type core struct {
	d       Deps
	cancels *cancels
	// successes puts the last successes a release leaves to it.
	successes *successes
	// onFinish is told of each run whose place freed (the queue runner
	// sends back an attempt that came up while the run was active);
	// signal then wakes the worker's loop.
	onFinish func(runID string)
	signal   func()
	// abandon ends when the drain's grace is over: a run's end that fails
	// after that is not tried again (settle.go).
	abandon       context.Context
	abandonCancel context.CancelFunc

	mu     sync.Mutex
	active map[string]*activeRun // by run id: being claimed or running
	// freed closes (and is replaced) when a run leaves active: an
	// assignment waiting for room under max_parallel looks again.
	freed chan struct{}
	// places is how many of max_parallel the core lets itself take, as
	// the ends' round trips say (places.go); lapse wakes the waiters for
	// a place when a cut lapses, as no end may come to wake them.
	places placeLimit
	// leastPlaces is the fewest places a cut leaves (places.go's
	// leastPlaces; a test sets fewer to see a cut on a few runs).
	leastPlaces int
	lapse       clockwork.Timer
	// stopping: the worker stopped claiming (full says so).
	stopping bool
}

type activeRun struct {
	cancel context.CancelCauseFunc // set once the run holds its slot
}

// newCore is a core with no place taken; its onFinish, a no-op until New
// sets the queue runner's, is set before the worker runs.
func newCore(d Deps, signal func()) *core {
	c := &core{d: d, successes: newSuccesses(d), signal: signal, onFinish: func(string) {}, active: map[string]*activeRun{}, freed: make(chan struct{}), leastPlaces: leastPlaces}
	c.abandon, c.abandonCancel = context.WithCancel(context.Background())
	c.cancels = newCancels(d.Keys, c.cancelRequested)
	return c
}

func (c *core) maxParallel() int {
	return max(1, c.d.Config().Worker.MaxParallel)
}

// freeLocked is how many places are free under the limit (places.go);
// c.mu held.
func (c *core) freeLocked() int {
	return c.places.of(c.maxParallel()) - len(c.active)
}

// ended counts a run's end (one attempt of it) that took took towards
// the limit of places, and logs a limit that moved.
func (c *core) ended(took time.Duration) {
	maxParallel := c.maxParallel()
	c.mu.Lock()
	before, after, judged := c.places.ended(c.d.Clock.Now(), took, maxParallel, c.leastPlaces)
	if judged && after < maxParallel {
		if c.lapse == nil {
			c.lapse = c.d.Clock.AfterFunc(staleWindow, c.lapsed)
		} else {
			c.lapse.Reset(staleWindow)
		}
	}
	c.mu.Unlock()
	if after != before {
		c.d.Log.Debug("places under max_parallel moved with the ends' round trips", "from", before, "to", after, "max_parallel", maxParallel)
	}
}

// takePlaces implements runCore.
func (c *core) takePlaces(n int, id func(i int) string) (int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	taken, free := 0, c.freeLocked() // free as found: each place taken fills one
	for taken < min(free, n) {
		runID := id(taken)
		if _, busy := c.active[runID]; busy {
			break
		}
		c.active[runID] = &activeRun{}
		taken++
	}
	return taken, c.freed
}

// take counts runID as active when a place is free and the run is not
// active already (busy).
func (c *core) take(runID string) (taken, busy bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.active[runID]; busy {
		return false, true
	}
	if c.freeLocked() <= 0 {
		return false, false
	}
	c.active[runID] = &activeRun{}
	return true, false
}

// busy reports whether runID is active (being claimed or running).
func (c *core) busy(runID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.active[runID]
	return ok
}

// room reports whether a place is free under max_parallel.
func (c *core) room() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freeLocked() > 0
}

// full implements runCore.
func (c *core) full() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.freeLocked() <= 0 || c.stopping
}

// stop marks the worker stopping: full from now on.
func (c *core) stop() {
	c.mu.Lock()
	c.stopping = true
	if c.lapse != nil {
		c.lapse.Stop()
	}
	c.mu.Unlock()
}

// lapsed ends a cut of the places that no window judged since the timer
// was set, and tells whoever waits for a place to look again: the places
// grew with no run leaving active. A window that judged the cut while
// the timer fired keeps it (lapse).
func (c *core) lapsed() {
	c.mu.Lock()
	grew := c.places.lapse(c.d.Clock.Now())
	if grew {
		c.wakeLocked()
	}
	c.mu.Unlock()
	if grew {
		c.signal()
	}
}

// wakeLocked closes freed and replaces it; c.mu held.
func (c *core) wakeLocked() {
	close(c.freed)
	c.freed = make(chan struct{})
}

// finish implements runCore. Its order is what keeps a retry: the run
// leaves active, then onFinish sends an attempt that waited behind it back
// to pending, then signal wakes the loop, which finds it there.
func (c *core) finish(runID string) {
	c.mu.Lock()
	delete(c.active, runID)
	c.wakeLocked()
	c.mu.Unlock()
	c.onFinish(runID)
	c.signal()
}

// cancelRequested stops a run this worker holds. It reads the run's
// cancel func under mu, which setCancel writes it under: the request comes
// from the cancels' watch, the run's start from its own goroutine.
func (c *core) cancelRequested(runID, reason string) {
	var cancel context.CancelCauseFunc
	c.mu.Lock()
	if a := c.active[runID]; a != nil {
		cancel = a.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel(errors.New("cancelled: " + reason))
	}
}

// setCancel registers the running run's cancel func and applies a cancel
// request that arrived before it.
func (c *core) setCancel(runID string, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	if a := c.active[runID]; a != nil {
		a.cancel = cancel
	}
	c.mu.Unlock()
	if reason, ok := c.cancels.Requested(runID); ok {
		cancel(errors.New("cancelled: " + reason))
	}
}

// cut ends the shutdown grace: a run's end that fails is not tried again,
// and every run still going is cancelled with errShutdown.
func (c *core) cut() {
	c.abandonCancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.active {
		if a.cancel != nil {
			a.cancel(errShutdown)
		}
	}
}
