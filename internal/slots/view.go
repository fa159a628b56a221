package slots

import (
	"context"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/watch"
)

// Run keeps the view until ctx ends: the resources' and rate windows'
// keys always (one read, then a watch of each prefix from the revision
// after it), the job slots' while the view is wanted (demand.go). A watch
// that closes is resumed from the revision after its last event; a
// compacted one (its history is gone) starts over with a fresh read
// (docs/design.md#the-safety-rules, rule 8).
func (s *Semaphore) Run(ctx context.Context) error {
	// The watches require a leader themselves; this makes the reads, too,
	// fail at once on a member without one rather than wait, so they are
	// retried, possibly on another member.
	ctx = clientv3.WithRequireLeader(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.followSlotsOnDemand(ctx) })
	err := s.limitsWatch().Run(ctx, limitsHandler{s})
	wg.Wait()
	return err
}

// limitsWatch follows the resources' and the rate windows' prefixes, each
// at its own pace: goneLocked judges a key by the watch of its own prefix.
func (s *Semaphore) limitsWatch() watch.Watch {
	return s.watchOf(s.layout.Resources(), s.layout.Rates())
}

// slotsWatch follows the job slots' prefix.
func (s *Semaphore) slotsWatch() watch.Watch { return s.watchOf(s.layout.Slots()) }

func (s *Semaphore) watchOf(prefixes ...string) watch.Watch {
	return watch.Watch{Client: s.client, Prefixes: prefixes, Retry: etcdRetry, Clock: s.clock, Logger: s.logger}
}

// limitsHandler is the resources' and rate windows' view as their watches
// see it; its methods are not Semaphore's, which has a Claim and Release
// to offer, not a Read.
type limitsHandler struct{ s *Semaphore }

func (v limitsHandler) Read(ctx context.Context) (int64, error) { return v.s.loadLimits(ctx) }

func (v limitsHandler) Apply(_ context.Context, prefix string, events []*clientv3.Event, _ int64) error {
	view := resourcesView
	if prefix == v.s.layout.Rates() {
		view = ratesView
	}
	v.s.apply(view, events)
	return nil
}

// slotsHandler is the job slots' view as its watch sees it.
type slotsHandler struct{ s *Semaphore }

func (v slotsHandler) Read(ctx context.Context) (int64, error) { return v.s.loadSlots(ctx) }

func (v slotsHandler) Apply(_ context.Context, _ string, events []*clientv3.Event, _ int64) error {
	v.s.apply(slotsView, events)
	return nil
}

// loadLimits replaces the resources' and rate windows' view with a read
// of both prefixes at one revision, and returns it.
func (s *Semaphore) loadLimits(ctx context.Context) (int64, error) {
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(s.layout.Resources(), clientv3.WithPrefix()),
		clientv3.OpGet(s.layout.Rates(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return 0, fmt.Errorf("slots: read held resource slots and rate places: %w", err)
	}
	rev := resp.Header.Revision
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[resourcesView], s.seen[ratesView] = rev, rev
	s.rates = map[string]place{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		s.rates[string(kv.Key)] = decodePlace(kv)
	}
	s.replaceLocked(ResourceSlot, resp.Responses[0].GetResponseRange().Kvs)
	if !s.loaded {
		s.loaded = true
		close(s.ready)
	}
	return rev, nil
}

// loadSlots replaces the job slots' view with a read of their prefix,
// and returns its revision.
func (s *Semaphore) loadSlots(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.layout.Slots(), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("slots: read held slots: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[slotsView] = resp.Header.Revision
	s.replaceLocked(JobSlot, resp.Kvs)
	if !s.slotsLoaded {
		s.slotsLoaded = true
		close(s.slotsReady)
	}
	return resp.Header.Revision, nil
}

// replaceLocked replaces the view's held keys of kind with kvs, read at
// the revision seen says, and ends the claims whose keys the read shows
// gone.
func (s *Semaphore) replaceLocked(kind Kind, kvs []*mvccpb.KeyValue) {
	s.dropLocked(kind)
	for _, kv := range kvs {
		s.put(kv)
	}
	s.settledLocked(kind)
	// A claim registered after this read began has a token above its
	// revision and is not in it; only older claims can be judged.
	for _, h := range s.held {
		if s.goneLocked(h) {
			s.lostLocked(h)
		}
	}
	s.signalLocked()
}

// dropLocked forgets the view's held keys of kind.
func (s *Semaphore) dropLocked(kind Kind) {
	for k, e := range s.entries {
		if e.kind == kind {
			delete(s.entries, k)
			s.count(e.group, -1)
		}
	}
}

// settledLocked sets the resource gauges after a read; job slots have
// none of the view's (metrics.go).
func (s *Semaphore) settledLocked(kind Kind) {
	if kind != ResourceSlot {
		return
	}
	for name := range s.metrics.resources {
		s.metrics.setResourceInUse(name, s.counts[group{ResourceSlot, name}])
	}
	for g, n := range s.counts {
		s.metrics.setResourceInUse(g.name, n)
	}
}

// apply takes one watch response's events of prefix view.
func (s *Semaphore) apply(view int, events []*clientv3.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Events the view has applied already would move it back while seen
	// says it is ahead (goneLocked relies on it); etcd should never send
	// them, and they are dropped if it does.
	for len(events) > 0 && events[0].Kv.ModRevision <= s.seen[view] {
		events = events[1:]
	}
	if len(events) == 0 {
		return
	}
	s.seen[view] = events[len(events)-1].Kv.ModRevision
	if view == ratesView {
		s.applyRatesLocked(events)
		return
	}
	s.applySlotsLocked(events)
}

// applyRatesLocked takes events of the rate windows' places.
func (s *Semaphore) applyRatesLocked(events []*clientv3.Event) {
	for _, ev := range events {
		if ev.Type == mvccpb.PUT {
			s.rates[string(ev.Kv.Key)] = decodePlace(ev.Kv)
		} else {
			delete(s.rates, string(ev.Kv.Key))
		}
	}
	// A waiter refused by a window wakes at its Until anyway; a
	// change here may free a place sooner (a config change).
	s.signalLocked()
}

// applySlotsLocked takes events of job or resource slot keys; a delete of
// a slot this replica holds is the loss of that hold.
func (s *Semaphore) applySlotsLocked(events []*clientv3.Event) {
	touched := false
	for _, ev := range events {
		k := string(ev.Kv.Key)
		if ev.Type == mvccpb.PUT {
			if e, ok := s.put(ev.Kv); ok {
				touched = true
				s.movedLocked(e.group)
			}
			continue
		}
		if e, ok := s.entries[k]; ok {
			delete(s.entries, k)
			s.count(e.group, -1)
			touched = true
			s.movedLocked(e.group)
		}
		h, ok := s.held[k]
		if !ok {
			continue
		}
		// A lagging watch may still report the end of the key's previous
		// holder; only a delete of this claim's incarnation is a loss. That
		// one came after the claim created the key (revision h.Token), an
		// earlier holder's before it, so the delete's revision tells them
		// apart without the previous value (which costs the member a
		// backend read per event and watcher).
		if ev.Kv.ModRevision > h.Token {
			s.lostLocked(h)
		}
	}
	if touched {
		s.signalLocked()
	}
}

// movedLocked sets the gauge of a resource whose count an event moved.
func (s *Semaphore) movedLocked(g group) {
	if g.kind == ResourceSlot {
		s.metrics.setResourceInUse(g.name, s.counts[g])
	}
}

// put records a held key; keys that are not slot keys are ignored.
func (s *Semaphore) put(kv *mvccpb.KeyValue) (entry, bool) {
	kind, name, index, ok := parseKey(s.layout, string(kv.Key))
	if !ok {
		s.logger.Debug("ignoring key under the slot prefixes", "key", string(kv.Key))
		return entry{}, false
	}
	// Counted whatever its value holds, so nobody is told the slot is free.
	e := entry{group: group{kind, name}, index: index, raw: kv.Value, token: kv.CreateRevision, lease: kv.Lease}
	if _, existed := s.entries[string(kv.Key)]; !existed {
		s.count(e.group, 1)
	}
	s.entries[string(kv.Key)] = e
	return e, true
}

func (s *Semaphore) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
