package slots

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/txnbatch"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Semaphore claims and releases slots and keeps a watch-maintained view of
// the held ones, so a claim on the queue path can pick free indexes without
// a read per try and wait for a slot to free: the resources' and rate
// windows' always, the job slots' while wanted (demand.go). Run maintains
// the view; the API reads the held slots from etcd (read.go).
type Semaphore struct {
	client  *clientv3.Client
	layout  keys.Layout
	logger  *slog.Logger
	metrics *metrics
	clock   clockwork.Clock // paces retries
	// commit carries claims and releases, beside the replica's other
	// per-run transactions: each keeps its compares and outcome.
	commit *txnbatch.Committer
	demand demand

	mu      sync.Mutex
	entries map[string]entry // held slot keys by key
	counts  map[group]int    // held keys per resource (ResourceInUse, its gauge)
	changed chan struct{}    // closed and replaced on every view change
	ready   chan struct{}    // closed after the first read of the resources and rate windows
	loaded  bool
	// slotsReady is closed while the job slots' view is loaded
	// (slotsLoaded): after its read, until it is dropped (demand.go).
	slotsReady  chan struct{}
	slotsLoaded bool
	held        map[string]*Held // claims made through this semaphore, by each of their keys
	rates       map[string]place // rate places by key
	// seen is the revision through which the view has applied each prefix
	// (slotsView, resourcesView, ratesView): the read's, then each watch
	// response's last event's; 0 for the job slots while they are not
	// followed.
	seen [3]int64
}

// The prefixes the view follows, as indexes of seen.
const (
	slotsView = iota
	resourcesView
	ratesView
)

// entry is one held slot key as the view saw it. Its value stays encoded:
// decoding it on every put was ~2 % of a replica's CPU at 2,000 runs a
// second, for a value only the API reads.
type entry struct {
	group
	index int
	raw   []byte // the key's value, a Value as JSON
	token int64  // CreateRevision
	lease int64
}

// group is a job or a shared resource.
type group struct {
	kind Kind
	name string
}

// Option changes how New builds a semaphore.
type Option func(*Semaphore)

// WithCommitter sends claims, releases and keeps through c, the replica's
// group committer, so they share commits with its other per-run writes.
// Without it the semaphore has a committer of its own.
func WithCommitter(c *txnbatch.Committer) Option {
	return func(s *Semaphore) { s.commit = c }
}

// WithJobs names the configured jobs, each shown by scheduler_slots_in_use
// (0 when it holds no slot).
func WithJobs(jobs func() []string) Option {
	return func(s *Semaphore) { s.metrics.jobInUse.jobs = jobs }
}

// WithTeams names each job's team for the team label of
// scheduler_slots_in_use (docs/teams.md).
func WithTeams(teamOf func(job string) string) Option {
	return func(s *Semaphore) { s.metrics.jobInUse.teamOf = teamOf }
}

// New checks its arguments; Run does the watching. layout is the
// scheduler's keys (keys.New of its prefix); reg may be nil.
func New(client *clientv3.Client, layout keys.Layout, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Semaphore, error) {
	if client == nil || layout.Prefix == "" {
		return nil, errors.New("slots: New needs an etcd client and a key layout (keys.New of the cluster's prefix)")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Semaphore{
		client:     client,
		layout:     layout,
		logger:     logger.With("component", "slots"),
		metrics:    m,
		clock:      clockwork.NewRealClock(),
		demand:     demand{linger: DefaultLinger, poke: make(chan struct{}, 1)},
		entries:    map[string]entry{},
		counts:     map[group]int{},
		changed:    make(chan struct{}),
		ready:      make(chan struct{}),
		slotsReady: make(chan struct{}),
		held:       map[string]*Held{},
		rates:      map[string]place{},
	}
	for _, o := range opts {
		o(s)
	}
	if err := s.demand.validate(); err != nil {
		return nil, err
	}
	m.jobInUse.running = func(ctx context.Context) (map[string]int, error) { return s.Running(ctx) }
	if s.commit == nil {
		// Its goroutines live only while a commit is in flight, and each
		// commit ends once its callers have all gone: nothing to close.
		if s.commit, err = txnbatch.New(client, txnbatch.Options{}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Ready closes once the view holds a first complete read.
func (s *Semaphore) Ready() <-chan struct{} { return s.ready }

// Changed closes at the next change of the view. Workers waiting for a free
// slot take it before trying and wait on it after ErrFull, so a release they
// race with is never missed.
func (s *Semaphore) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// count moves g's count of held keys by delta; only resources are
// counted (a job's slots are counted when asked: Running).
func (s *Semaphore) count(g group, delta int) {
	if g.kind != ResourceSlot {
		return
	}
	if s.counts[g] += delta; s.counts[g] == 0 {
		delete(s.counts, g)
	}
}

// Token is the fencing token (CreateRevision) of the slot key key, per
// the view; ok is false when the view shows it free or the job slots'
// view is not loaded (Loaded says which), which it then wants. The reaper
// asks it of each running queue entry's slot: a lookup, not a read.
func (s *Semaphore) Token(key string) (token int64, ok bool) {
	s.Want()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	return e.token, ok
}

// ResourceInUse is how many slots of a shared resource are held, per the view.
func (s *Semaphore) ResourceInUse(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[group{ResourceSlot, name}]
}

// Info is one held slot as GET /api/v1/slots shows it: exactly one of Job
// and Resource is set; with Window set, a rate window's row instead.
type Info = wire.Slot

// Loaded says whether the job slots' view holds a read now.
func (s *Semaphore) Loaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotsLoaded
}

// free returns the indexes below limit that the view shows as free.
func (s *Semaphore) free(kind Kind, name string, limit int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var free []int
	for i := range limit {
		if _, taken := s.entries[slotKey(s.layout, kind, name, i)]; !taken {
			free = append(free, i)
		}
	}
	return free
}

// Free is how many of the first limit slots of a job slot group (the job,
// or "<job>/<key>") or of a resource the view shows free.
// It wants the job slots' view.
func (s *Semaphore) Free(kind Kind, name string, limit int) int {
	if kind == JobSlot {
		s.Want()
	}
	return len(s.free(kind, name, limit))
}
