package worker

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// The worker is two runners over one core, each owning its state, its
// lock and its goroutines (counted in the worker's wait group, which the
// drain waits for). The queue runner (queueRunner: queuerunner.go,
// start.go and the files of the queue path) claims pending runs from the
// queue view; the assigned runner (assignedRunner: assigned*.go) claims
// this replica's assignments of the lean protocol (docs/protocol.md),
// takes over its peers' when they let them pass, and hands its own over
// when it stops (its mover). Both run what they claimed through the core
// (core.go: execute, settle) and count it in the same places under
// max_parallel, which the core's lock guards. The Worker (worker.go) wires
// them and runs the one loop that dispatches for both.
//
// Locks: the queue runner's is taken before the core's (and the views' it
// reads), never after; the core's is the last taken, the one lock both
// runners share. No lock is held while a run executes or etcd is written.

// runCore is what the assigned runner uses of the core (core.go): the
// places under max_parallel, and a claimed run's execution and end.
type runCore interface {
	// takePlaces counts the first of n runs as active, as many as
	// max_parallel has room for, stopping at one active already; it
	// returns how many, with what closes when a place next frees. id
	// names the i-th run; it is called only for the runs it takes, so a
	// waiter woken with no room builds nothing.
	takePlaces(n int, id func(i int) string) (int, <-chan struct{})
	// finish gives back a run's place.
	finish(runID string)
	// full: no place free, or the worker is stopping.
	full() bool
	execute(q *queue.Item, entry *queue.Entry, held *slots.Held, log *slog.Logger, span *tracing.Run) error
}

// assignedRunner claims and runs this replica's assignments, takes over
// the peers' a backup may take, and hands its own over when it stops. It
// owns the views of assignments (its own and its peers'), the count of
// assignments still claiming and the next take-over turn; its goroutines
// are the worker's (wg), so the drain waits for them.
type assignedRunner struct {
	d       Deps
	core    runCore
	members *members
	rtt     *claimLatency // the worker's claim round trips: a backup waits longer when etcd is slow
	wg      *sync.WaitGroup
	signal  func() // wakes the worker's loop

	view  *assignedView
	mover *mover
	marks *startMarks // the start marks of chunks claimed ahead, by instant
	// claiming counts this worker's assignments with chunks still to
	// claim: while it has some, it takes none over.
	claiming atomic.Int32
}

// mover moves assignments between replicas: as a backup it takes over a
// peer's that its worker let pass (assigned_takeover.go), and when the
// worker stops it hands this replica's own to the replicas that stay
// (assigned_handback.go, handOffAhead). It owns the view of the peers'
// assignments and the next take-over turn.
type mover struct {
	d       Deps
	view    *assignedView // this replica's, for the hand-back
	peers   *peerView
	members *members
	rtt     *claimLatency
	wg      *sync.WaitGroup
	// busy: the worker has no room for a take-over (no place, stopping,
	// or its own assignments still claiming).
	busy func() bool

	mu sync.Mutex
	// takeOverAt is the next peer assignment's take-over turn (zero: none).
	takeOverAt time.Time
}

func newAssignedRunner(d Deps, core runCore, m *members, rtt *claimLatency, wg *sync.WaitGroup, signal func()) *assignedRunner {
	a := &assignedRunner{d: d, core: core, members: m, rtt: rtt, wg: wg, signal: signal}
	a.view = newAssignedView(d.Keys, signal, d.Config, d.ClaimLead)
	a.marks = newStartMarks(d.Assign.Claimer, d.Clock, d.Log, d.Metrics.StartMarks)
	a.mover = &mover{d: d, view: a.view, peers: newPeerView(d.Keys, d.Clock, d.ID, d.ClaimLead, signal), members: m, rtt: rtt, wg: wg,
		busy: func() bool { return core.full() || a.claiming.Load() > 0 }}
	m.ids.Subscribe(a.mover.peers.membersChanged)
	return a
}

// next is when the loop must look again for this runner: the earliest
// assignment to take up or take-over turn (zero: none).
func (a *assignedRunner) next() time.Time {
	next := a.mover.next()
	if own := a.view.next(); a.d.Assign != nil && !own.IsZero() && (next.IsZero() || own.Before(next)) {
		next = own
	}
	return next
}

func (m *mover) setTakeOverAt(at time.Time) {
	m.mu.Lock()
	m.takeOverAt = at
	m.mu.Unlock()
}

// next is the next take-over turn (zero: none).
func (m *mover) next() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.takeOverAt
}
