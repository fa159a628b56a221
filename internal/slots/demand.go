package slots

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The job slots' view is kept only while something of this replica needs
// it: a claim on the queue path (which picks free indexes from it and
// waits on its changes for a slot to free), a lean claim of a job with
// more than one slot (FreeIndex), the reaper, or whatever WithDemand's
// need reports (a replica: its queue view holds an entry). A replica whose
// runs are all lean reads nothing of it: the slot keys, two watch events
// per run on every replica though one runs it, were most of what a
// replica decoded (docs/design-admission.md#the-slot-view). Wanted again,
// it is read afresh and followed from there; what the API and the
// leader's judge ask of the held slots is read from etcd (read.go).

// Demand's defaults: how long the view stays after the last Want when
// nothing needs it, and how often the need is asked. A read of the held
// keys costs less than a few seconds of their events: with 30 s, every
// replica kept the view through a burst's 20 s window in one run of two at
// 2,000 jobs (test/bench, 2026-11-30), with no queue event in the window:
// queue-path work in the 8 s warm-up before it, as far as the counters tell.
const (
	DefaultLinger = 5 * time.Second
	demandCheck   = time.Second
)

// demand is what keeps the job slots' view: need, asked every
// demandCheck, and Want, which lasts linger.
type demand struct {
	need   func() bool
	linger time.Duration
	poke   chan struct{} // a Want, to the loop that follows the view

	mu     sync.Mutex
	wanted time.Time // the last Want
}

// WithDemand keeps the job slots' view while need reports true, and for
// linger after the last Want (claims want it). need is asked every
// second, from one goroutine; it must be quick.
func WithDemand(need func() bool, linger time.Duration) Option {
	return func(s *Semaphore) { s.demand.need, s.demand.linger = need, linger }
}

func (d *demand) validate() error {
	if d.linger <= 0 {
		return errors.New("slots: WithDemand needs a linger above zero")
	}
	return nil
}

// Want keeps the job slots' view (loading it when it is not kept) for at
// least the linger from now.
func (s *Semaphore) Want() {
	s.demand.mu.Lock()
	s.demand.wanted = s.clock.Now()
	s.demand.mu.Unlock()
	select {
	case s.demand.poke <- struct{}{}:
	default:
	}
}

// isWanted says whether the view is to be kept now.
func (s *Semaphore) isWanted() bool {
	s.demand.mu.Lock()
	w := s.demand.wanted
	s.demand.mu.Unlock()
	if !w.IsZero() && s.clock.Since(w) < s.demand.linger {
		return true
	}
	return s.demand.need != nil && s.demand.need()
}

// followSlotsOnDemand follows the job slots' prefix while the view is
// wanted, and forgets it when it is not, until ctx ends.
func (s *Semaphore) followSlotsOnDemand(ctx context.Context) {
	tick := s.clock.NewTicker(demandCheck)
	defer tick.Stop()
	for {
		for !s.isWanted() {
			select {
			case <-ctx.Done():
				return
			case <-s.demand.poke:
			case <-tick.Chan():
			}
		}
		wctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = s.slotsWatch().Run(wctx, slotsHandler{s}) }) // nil: it ends with wctx
		for s.isWanted() && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.Chan():
			}
		}
		stop()
		wg.Wait()
		if ctx.Err() != nil {
			return // stopped, not unwanted: the view stays as it stands
		}
		s.dropSlots()
		s.logger.Debug("the job slots' view is no longer wanted: not followed until it is")
	}
}

// dropSlots forgets the job slots' view: none of its claims is judged
// lost by it until it is read again (goneLocked), and a claim waits for
// that read (waitReady).
func (s *Semaphore) dropSlots() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(JobSlot)
	s.seen[slotsView] = 0
	// A ready channel not closed yet stays: whoever waits on it is let go
	// by the next read.
	if s.slotsLoaded {
		s.slotsLoaded = false
		s.slotsReady = make(chan struct{})
	}
	s.signalLocked()
}

// waitReady wants the job slots' view and blocks until it and the
// resources' and rate windows' are loaded, so a claim never trusts an
// empty view that merely has not been read yet.
func (s *Semaphore) waitReady(ctx context.Context) error {
	s.Want()
	for _, ready := range []func() <-chan struct{}{s.Ready, s.slotsReadyChan} {
		select {
		case <-ready():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

func (s *Semaphore) slotsReadyChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotsReady
}
