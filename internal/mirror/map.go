package mirror

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Map is a Handler that keeps a prefix as a map from K to V: the copy of
// etcd most of a replica's views are (queued runs, specs, pauses, cancel
// requests, notifications, members). Each key's value is decoded once, as
// it arrives; readers get what the last Reset or Apply left, and Changed
// to wait for the next change.
type Map[K comparable, V any] struct {
	key    func(key string) (K, bool)
	decode func(kv *mvccpb.KeyValue, prev V, had bool) (V, bool)

	mu      sync.Mutex
	items   map[K]V
	rev     int64
	changed chan struct{} // closed and replaced at each change
	ready   chan struct{} // closed by the first Reset
	loaded  bool
	hooks   []func(Change[K, V]) // under mu
	subs    []func([]Change[K, V])
}

// Change is one key's change, as handed to subscribers: a put of Value
// (Prev is what it replaced, if Had), or a delete of Prev.
type Change[K comparable, V any] struct {
	Key     K
	Value   V
	Prev    V
	Had     bool
	Deleted bool
}

// NewMap is an empty map; Run fills it. key names the entry of an etcd key
// (false: a key under the prefix that is not the map's, ignored); decode
// reads a put's value, given the value it replaces (had: there is one), so
// a value that cannot change is decoded once. decode returns false for a
// value it cannot read: the entry stays as it was (none on a Reset), and
// decode says why in its own log. decode runs under the map's lock. A nil
// key or decode is a programming error and panics.
func NewMap[K comparable, V any](key func(key string) (K, bool), decode func(kv *mvccpb.KeyValue, prev V, had bool) (V, bool)) *Map[K, V] {
	if key == nil || decode == nil {
		panic("mirror: NewMap needs a key and a decode function")
	}
	return &Map[K, V]{key: key, decode: decode, items: map[K]V{}, changed: make(chan struct{}), ready: make(chan struct{})}
}

// Subscribe has f told of each batch of changes: Reset's (a delete of each
// key gone, then a put of each key held) and Apply's and Store's. f runs after
// the map holds them, outside its lock, on the goroutine that changed it
// (the mirror's, or Store's caller); it must not block. Subscribe before
// Run.
func (m *Map[K, V]) Subscribe(f func([]Change[K, V])) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs = append(m.subs, f)
}

// Reset implements Handler.
func (m *Map[K, V]) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	m.mu.Lock()
	old := m.items
	// Sized as before, not by kvs: a prefix may hold many keys the map
	// does not keep (jobs/ holds a cursor per job beside the few pauses).
	fresh := make(map[K]V, len(old))
	var puts, changes []Change[K, V]
	for _, kv := range kvs {
		k, ok := m.key(string(kv.Key))
		if !ok {
			continue
		}
		prev, had := old[k]
		if v, ok := m.decode(kv, prev, had); ok {
			fresh[k] = v
			puts = append(puts, Change[K, V]{Key: k, Value: v, Prev: prev, Had: had})
		}
	}
	for k, prev := range old {
		if _, ok := fresh[k]; !ok {
			changes = append(changes, Change[K, V]{Key: k, Prev: prev, Had: true, Deleted: true})
		}
	}
	changes = append(changes, puts...)
	m.hookLocked(changes)
	m.items, m.rev = fresh, rev
	if !m.loaded {
		m.loaded = true
		close(m.ready)
	}
	m.signalLocked()
	subs := m.subs
	m.mu.Unlock()
	tell(subs, changes)
}

// Apply implements Handler. Changed closes when an event changed an entry.
func (m *Map[K, V]) Apply(events []*clientv3.Event, rev int64) {
	m.mu.Lock()
	m.rev = max(m.rev, rev)
	var changes []Change[K, V]
	for _, ev := range events {
		k, ok := m.key(string(ev.Kv.Key))
		if !ok {
			continue
		}
		prev, had := m.items[k]
		if ev.Type == clientv3.EventTypeDelete {
			if had {
				delete(m.items, k)
				changes = append(changes, Change[K, V]{Key: k, Prev: prev, Had: true, Deleted: true})
			}
			continue
		}
		if v, ok := m.decode(ev.Kv, prev, had); ok {
			m.items[k] = v
			changes = append(changes, Change[K, V]{Key: k, Value: v, Prev: prev, Had: had})
		}
	}
	if len(changes) > 0 {
		m.hookLocked(changes)
		m.signalLocked()
	}
	subs := m.subs
	m.mu.Unlock()
	tell(subs, changes)
}

// Store adds v at k unless the map holds k already, and returns what it
// holds then: for a value read from etcd apart from the watch (one the
// watch has not brought yet), which the watch's own put will find there.
func (m *Map[K, V]) Store(k K, v V) (held V, stored bool) {
	m.mu.Lock()
	if cur, ok := m.items[k]; ok {
		m.mu.Unlock()
		return cur, false
	}
	m.items[k] = v
	changes := []Change[K, V]{{Key: k, Value: v}}
	m.hookLocked(changes)
	m.signalLocked()
	subs := m.subs
	m.mu.Unlock()
	tell(subs, changes)
	return v, true
}

// OnChange has f called with each change as the map makes it, under its
// lock: for state derived from the map (an index) that must never
// disagree with it, read and changed through With. f must be quick and
// must not call the map. OnChange before Run.
func (m *Map[K, V]) OnChange(f func(Change[K, V])) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hooks = append(m.hooks, f)
}

// With runs f under the map's lock, for state kept by OnChange: f may
// read it and the map (get), and replace held entries in place (set: a
// value worked out anew, not a change in etcd). OnChange hooks see each
// set, subscribers are not told; Changed closes if f set anything. f must
// not call the map.
func (m *Map[K, V]) With(f func(get func(K) (V, bool), set func(K, V))) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	get := func(k K) (V, bool) { v, ok := m.items[k]; return v, ok }
	set := func(k K, v V) {
		prev, had := m.items[k]
		if !had {
			return
		}
		m.items[k] = v
		m.hookLocked([]Change[K, V]{{Key: k, Value: v, Prev: prev, Had: true}})
		changed = true
	}
	f(get, set)
	if changed {
		m.signalLocked()
	}
}

func (m *Map[K, V]) hookLocked(changes []Change[K, V]) {
	for _, f := range m.hooks {
		for _, c := range changes {
			f(c)
		}
	}
}

func tell[K comparable, V any](subs []func([]Change[K, V]), changes []Change[K, V]) {
	if len(changes) == 0 {
		return
	}
	for _, f := range subs {
		f(changes)
	}
}

func (m *Map[K, V]) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Get returns the entry at k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.items[k]
	return v, ok
}

// Len is how many entries the map holds.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Keys are the keys held, in no order.
func (m *Map[K, V]) Keys() []K {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]K, 0, len(m.items))
	for k := range m.items {
		out = append(out, k)
	}
	return out
}

// Values are the entries held, in no order.
func (m *Map[K, V]) Values() []V {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]V, 0, len(m.items))
	for _, v := range m.items {
		out = append(out, v)
	}
	return out
}

// Range calls f with each entry, in no order, until f returns false. It
// holds the map's lock meanwhile: f must be quick and not call the map.
func (m *Map[K, V]) Range(f func(K, V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.items {
		if !f(k, v) {
			return
		}
	}
}

// Changed closes at the next change of an entry (and at each Reset).
func (m *Map[K, V]) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Ready closes once the map has read the prefix.
func (m *Map[K, V]) Ready() <-chan struct{} { return m.ready }

// Seen reports whether the map shows every change up to rev.
func (m *Map[K, V]) Seen(rev int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev >= rev
}
