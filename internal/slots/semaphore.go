package slots

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/txnbatch"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Semaphore claims and releases slots and keeps a watch-maintained view of
// every held one, so a claim can pick free indexes without a read per try
// and the API can list them. Run maintains the view.
type Semaphore struct {
	client  *clientv3.Client
	layout  keys.Layout
	logger  *slog.Logger
	metrics *metrics
	clock   clockwork.Clock // paces retries
	// commit carries claims and releases, beside the replica's other
	// per-run transactions: each keeps its compares and outcome.
	commit *txnbatch.Committer

	mu      sync.Mutex
	entries map[string]entry // held slot keys by key
	counts  map[group]int    // held keys per job or resource
	// jobs is held job slot keys per job, whatever their concurrency
	// keys: the sum of counts over the job's groups, kept beside them
	// (count) so that a slot event costs the same at 10 jobs as at 10,000.
	jobs    map[string]int
	changed chan struct{} // closed and replaced on every view change
	ready   chan struct{} // closed after the first read
	loaded  bool
	held    map[string]*Held // claims made through this semaphore, by each of their keys
	rates   map[string]place // rate places by key
	// seen is the revision through which the view has applied each prefix
	// (slotsView, resourcesView, ratesView): the read's, then each watch
	// response's last event's.
	seen [3]int64
}

// The prefixes the view follows, as indexes of seen.
const (
	slotsView = iota
	resourcesView
	ratesView
)

// entry is one held slot key as the view saw it. Its value stays encoded
// until List shows it: decoding it on every put was ~2 % of a replica's
// CPU at 2,000 runs a second, for a value only the API reads.
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

// WithTeams names each job's team for the team label of
// scheduler_slots_in_use (docs/teams.md).
func WithTeams(teamOf func(job string) string) Option {
	return func(s *Semaphore) { s.metrics.teamOf = teamOf }
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
		client:  client,
		layout:  layout,
		logger:  logger.With("component", "slots"),
		metrics: m,
		clock:   clockwork.NewRealClock(),
		entries: map[string]entry{},
		counts:  map[group]int{},
		jobs:    map[string]int{},
		changed: make(chan struct{}),
		ready:   make(chan struct{}),
		held:    map[string]*Held{},
		rates:   map[string]place{},
	}
	for _, o := range opts {
		o(s)
	}
	if s.commit == nil {
		// Its goroutines live only while a commit is in flight, and each
		// commit ends with its callers' contexts: nothing to close.
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

// InUse is how many slots of job are held, per the view, whatever their
// concurrency keys.
func (s *Semaphore) InUse(job string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobTotalLocked(job)
}

func (s *Semaphore) jobTotalLocked(job string) int { return s.jobs[job] }

// count moves g's count of held keys, and its job's, by delta.
func (s *Semaphore) count(g group, delta int) {
	if s.counts[g] += delta; s.counts[g] == 0 {
		delete(s.counts, g)
	}
	if g.kind != JobSlot {
		return
	}
	job, _ := keys.SplitSlotGroup(g.name)
	if s.jobs[job] += delta; s.jobs[job] == 0 {
		delete(s.jobs, job)
	}
}

// setInUseLocked updates the gauge of g: a job's counts all its keys.
func (s *Semaphore) setInUseLocked(g group) {
	if g.kind == ResourceSlot {
		s.metrics.setInUse(g.kind, g.name, s.counts[g])
		return
	}
	job, _ := keys.SplitSlotGroup(g.name)
	s.metrics.setInUse(JobSlot, job, s.jobTotalLocked(job))
}

// Token is the fencing token (CreateRevision) of the slot key key, per
// the view; ok is false when the view shows it free. The reaper asks it of
// each running queue entry's slot: a lookup, where List decodes and sorts
// every held slot.
func (s *Semaphore) Token(key string) (token int64, ok bool) {
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

// List returns every held slot, jobs before resources, by name and index.
func (s *Semaphore) List() []Info {
	return s.infos(func(entry) bool { return true })
}

// Of returns job's held slots (its concurrency keys' too), per the view,
// by key and index. The overdue judge asks it of each tick it judges and
// the API of a run it looks for: it decodes job's slots only, where List
// decodes every held slot, so judging N jobs' ticks costs N times their
// own slots, not N times all.
func (s *Semaphore) Of(job string) []Info {
	if s.InUse(job) == 0 {
		return nil
	}
	return s.infos(func(e entry) bool {
		j, _ := keys.SplitSlotGroup(e.name)
		return e.kind == JobSlot && j == job
	})
}

// infos decodes the held slots keep takes, in List's order.
func (s *Semaphore) infos(keep func(entry) bool) []Info {
	s.mu.Lock()
	var sorted []entry
	for _, e := range s.entries {
		if keep(e) {
			sorted = append(sorted, e)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(sorted, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name), cmp.Compare(a.index, b.index))
	})
	list := make([]Info, 0, len(sorted))
	for _, e := range sorted {
		var v Value
		if err := json.Unmarshal(e.raw, &v); err != nil {
			// Still held, and shown so: only who holds it is unknown.
			s.logger.Debug("slot key holds no valid value", "job_or_resource", e.name, "slot", e.index, "err", err)
		}
		info := Info{
			Slot:         e.index,
			RunID:        v.RunID,
			Holder:       v.Holder,
			FencingToken: e.token,
			StartedAt:    v.StartedAt,
			ScheduledAt:  v.ScheduledAt,
		}
		if e.kind == ResourceSlot {
			info.Resource = e.name
		} else {
			info.Job, info.ConcurrencyKey = keys.SplitSlotGroup(e.name)
		}
		list = append(list, info)
	}
	return list
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

// waitReady blocks until the view is loaded, so a claim never trusts an
// empty view that merely has not been read yet.
func (s *Semaphore) waitReady(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Free is how many of the first limit slots of a job slot group (the job,
// or "<job>/<key>") or of a resource the view shows free.
func (s *Semaphore) Free(kind Kind, name string, limit int) int {
	return len(s.free(kind, name, limit))
}
