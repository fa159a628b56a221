package slots

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/watch"
)

// Run keeps the view of held slots and rate places until ctx ends: one
// read of the three prefixes, then a watch of each from the revision after it. A watch that
// closes is resumed from the revision after its last event; a compacted one
// (its history is gone) starts over with a fresh read (docs/design.md#the-safety-rules, rule 8).
func (s *Semaphore) Run(ctx context.Context) error {
	// The watches require a leader themselves; this makes the read, too,
	// fail at once on a member without one rather than wait, so it is
	// retried, possibly on another member.
	ctx = clientv3.WithRequireLeader(ctx)
	return s.watch().Run(ctx, viewHandler{s})
}

// watch follows both prefixes, each at its own pace: goneLocked judges a
// key by the watch of its own prefix.
func (s *Semaphore) watch() watch.Watch {
	return watch.Watch{
		Client:   s.client,
		Prefixes: []string{slotsView: s.layout.Slots(), resourcesView: s.layout.Resources(), ratesView: s.layout.Rates()},
		Retry:    etcdRetry,
		Clock:    s.clock,
		Logger:   s.logger,
	}
}

// viewHandler is the view as the watches see it; its methods are not
// Semaphore's, which has a Claim and Release to offer, not a Read.
type viewHandler struct{ s *Semaphore }

func (v viewHandler) Read(ctx context.Context) (int64, error) {
	if err := v.s.load(ctx); err != nil {
		return 0, err
	}
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.seen[slotsView], nil // load reads both at one revision
}

func (v viewHandler) Apply(_ context.Context, prefix string, events []*clientv3.Event, _ int64) error {
	view := slotsView
	switch prefix {
	case v.s.layout.Resources():
		view = resourcesView
	case v.s.layout.Rates():
		view = ratesView
	}
	v.s.apply(view, events)
	return nil
}

// load replaces the view with a read of both prefixes at one revision.
func (s *Semaphore) load(ctx context.Context) error {
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(s.layout.Slots(), clientv3.WithPrefix()),
		clientv3.OpGet(s.layout.Resources(), clientv3.WithPrefix()),
		clientv3.OpGet(s.layout.Rates(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return fmt.Errorf("slots: read held slots: %w", err)
	}
	rev := resp.Header.Revision
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = [3]int64{rev, rev, rev}
	old := s.counts
	s.entries = map[string]entry{}
	s.counts = map[group]int{}
	s.jobs = map[string]int{}
	s.rates = map[string]place{}
	for _, r := range resp.Responses[:2] {
		for _, kv := range r.GetResponseRange().Kvs {
			s.put(kv)
		}
	}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		s.rates[string(kv.Key)] = decodePlace(kv)
	}
	for g := range old {
		s.setInUseLocked(g)
	}
	for g := range s.counts {
		s.setInUseLocked(g)
	}
	// A claim registered after this read began has a token above rev and
	// is not in it; only older claims can be judged.
	for _, h := range s.held {
		if s.goneLocked(h) {
			s.lostLocked(h)
		}
	}
	if !s.loaded {
		s.loaded = true
		close(s.ready)
	}
	s.signalLocked()
	return nil
}

// follow watches both prefixes from the revision after the view's and
// resumes each watch after its last event until the history is compacted
// (an error wrapping rpctypes.ErrCompacted) or ctx ends.
func (s *Semaphore) follow(ctx context.Context) error {
	from := s.watchFrom()
	return s.watch().Follow(ctx, viewHandler{s}, from[slotsView], from[resourcesView], from[ratesView])
}

// watchFrom is where each prefix's watch goes on: the revision after the
// view's.
func (s *Semaphore) watchFrom() [3]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return [3]int64{s.seen[0] + 1, s.seen[1] + 1, s.seen[2] + 1}
}

// apply takes one watch response's events of prefix view (slotsView or
// resourcesView).
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
	touched := map[group]bool{}
	for _, ev := range events {
		k := string(ev.Kv.Key)
		if ev.Type == mvccpb.PUT {
			if e, ok := s.put(ev.Kv); ok {
				touched[e.group] = true
			}
			continue
		}
		if e, ok := s.entries[k]; ok {
			delete(s.entries, k)
			s.count(e.group, -1)
			touched[e.group] = true
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
	for g := range touched {
		s.setInUseLocked(g)
	}
	if len(touched) > 0 {
		s.signalLocked()
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
