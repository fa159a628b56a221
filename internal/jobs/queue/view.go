package queue

import (
	"log/slog"
	"sort"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Item is one queue entry as the view knows it.
type Item struct {
	*Entry
	Key    string
	ModRev int64 // for a running entry: the fencing token of its slot
}

// View mirrors queue/ so workers learn of new runs from a watch, not by
// polling, and the reaper and API can look at running runs without a read.
// It is a mirror.Handler. It resolves each entry's spec from its copy of
// specs/ (Specs); an entry whose spec that copy has not seen yet is
// resolved when the spec arrives, and is meanwhile shown unresolved (a
// worker then reads the spec itself before it claims, Specs.Resolve).
type View struct {
	keys  keys.Layout
	log   *slog.Logger
	specs *Specs

	mu       sync.Mutex
	entries  map[string]*Item           // by key
	running  map[string]*Item           // the entries in state running, by key
	index    index                      // the entries by job and by resource
	waiting  map[string]map[string]bool // spec key -> the keys of unresolved entries that refer to it
	rev      int64
	ready    chan struct{} // closed at the first Reset
	changed  chan struct{}
	onChange []func(q *Item) // called with each put (pending or running)
	onDelete []func(key string, prev *Item)
}

// NewView is an empty view; mirror.Run fills it. Entries are resolved
// from specs, whose own mirror fills it.
func NewView(layout keys.Layout, log *slog.Logger, specs *Specs) *View {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &View{keys: layout, log: log, specs: specs, entries: map[string]*Item{}, running: map[string]*Item{}, index: newIndex(),
		waiting: map[string]map[string]bool{}, ready: make(chan struct{}), changed: make(chan struct{})}
	specs.Subscribe(func(changes []mirror.Change[string, *Spec]) {
		var arrived []string
		for _, c := range changes {
			if !c.Deleted && !c.Had {
				arrived = append(arrived, c.Key)
			}
		}
		if len(arrived) > 0 {
			v.specsArrived(arrived)
		}
	})
	return v
}

// Subscribe registers callbacks; they run on the mirror goroutine, outside
// the view's lock, and must not block.
func (v *View) Subscribe(put func(*Item), del func(string, *Item)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if put != nil {
		v.onChange = append(v.onChange, put)
	}
	if del != nil {
		v.onDelete = append(v.onDelete, del)
	}
}

func (v *View) decode(kv *mvccpb.KeyValue) *Item {
	e, err := Decode(kv.Value)
	if err != nil {
		v.log.Warn("ignoring unreadable queue entry", "key", string(kv.Key), "err", err)
		return nil
	}
	return &Item{Entry: e, Key: string(kv.Key), ModRev: kv.ModRevision}
}

// resolveLocked resolves q from the spec copy, or notes it as waiting for
// its spec. Called with v.mu held: a spec that arrives meanwhile finds the
// note (specsArrived takes v.mu).
func (v *View) resolveLocked(q *Item) *Item {
	if q.Resolved() {
		return q
	}
	key := q.SpecKey(v.keys)
	if sp := v.specs.lookup(key); sp != nil {
		return &Item{Entry: q.withSpec(sp), Key: q.Key, ModRev: q.ModRev}
	}
	w := v.waiting[key]
	if w == nil {
		w = map[string]bool{}
		v.waiting[key] = w
	}
	w[q.Key] = true
	return q
}

// forgetLocked drops the note of an unresolved entry that changed or left.
func (v *View) forgetLocked(prev *Item) {
	if prev == nil || prev.Resolved() {
		return
	}
	key := prev.SpecKey(v.keys)
	if w := v.waiting[key]; w != nil {
		delete(w, prev.Key)
		if len(w) == 0 {
			delete(v.waiting, key)
		}
	}
}

// specsArrived resolves the entries that waited for these specs. It
// replaces them in place (same key and revision) and tells no
// subscriber: nothing about the run changed, and whoever acts on it gets
// it again from the view.
func (v *View) specsArrived(specKeys []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	changed := false
	for _, sk := range specKeys {
		w := v.waiting[sk]
		sp := v.specs.lookup(sk)
		if w == nil || sp == nil {
			continue // nothing waits, or deleted again already: still waiting
		}
		delete(v.waiting, sk)
		for key := range w {
			q := v.entries[key]
			if q == nil || q.Resolved() || q.SpecKey(v.keys) != sk {
				continue
			}
			r := &Item{Entry: q.withSpec(sp), Key: q.Key, ModRev: q.ModRev}
			v.entries[key] = r
			v.index.remove(q)
			v.index.add(r) // resolved, it names its resources
			if _, ok := v.running[key]; ok {
				v.running[key] = r
			}
			changed = true
		}
	}
	if changed {
		v.signalLocked()
	}
}

// Reset implements mirror.Handler.
func (v *View) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	fresh := make(map[string]*Item, len(kvs))
	running := map[string]*Item{}
	idx := newIndex()
	decoded := make([]*Item, 0, len(kvs))
	for _, kv := range kvs {
		if q := v.decode(kv); q != nil {
			decoded = append(decoded, q)
		}
	}
	v.mu.Lock()
	clear(v.waiting)
	for _, q := range decoded {
		q = v.resolveLocked(q)
		fresh[q.Key] = q
		idx.add(q)
		if q.State == Running {
			running[q.Key] = q
		}
	}
	old := v.entries
	v.entries, v.running, v.index, v.rev = fresh, running, idx, rev
	puts, dels := v.onChange, v.onDelete
	v.signalLocked()
	select {
	case <-v.ready:
	default:
		close(v.ready)
	}
	v.mu.Unlock()
	for k, q := range old {
		if _, ok := fresh[k]; !ok {
			for _, f := range dels {
				f(k, q)
			}
		}
	}
	for _, q := range fresh {
		for _, f := range puts {
			f(q)
		}
	}
}

// Apply implements mirror.Handler.
func (v *View) Apply(events []*clientv3.Event, rev int64) {
	type change struct {
		key  string
		put  *Item
		prev *Item
	}
	var changes []change
	v.mu.Lock()
	for _, ev := range events {
		key := string(ev.Kv.Key)
		prev := v.entries[key]
		if ev.Type == clientv3.EventTypeDelete {
			v.forgetLocked(prev)
			v.index.remove(prev)
			delete(v.entries, key)
			delete(v.running, key)
			changes = append(changes, change{key: key, prev: prev})
			continue
		}
		if q := v.decode(ev.Kv); q != nil {
			v.forgetLocked(prev)
			v.index.remove(prev)
			q = v.resolveLocked(q)
			v.entries[key] = q
			v.index.add(q)
			if q.State == Running {
				v.running[key] = q
			} else {
				delete(v.running, key)
			}
			changes = append(changes, change{key: key, put: q, prev: prev})
		}
	}
	v.rev = rev
	puts, dels := v.onChange, v.onDelete
	v.signalLocked()
	v.mu.Unlock()
	for _, c := range changes {
		if c.put != nil {
			for _, f := range puts {
				f(c.put)
			}
		} else {
			for _, f := range dels {
				f(c.key, c.prev)
			}
		}
	}
}

func (v *View) signalLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// Changed closes at the next change of the view.
func (v *View) Changed() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

// Get returns the entry at key as last seen.
func (v *View) Get(key string) *Item {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.entries[key]
}

// Find returns the entry of runID.
func (v *View) Find(runID string) *Item {
	return v.Get(v.keys.Entry(runs.JobOf(runID), runID))
}

// List returns entries matching keep, oldest scheduled first.
func (v *View) List(keep func(*Item) bool) []*Item {
	v.mu.Lock()
	out := filter(v.entries, keep)
	v.mu.Unlock()
	sortQueued(out)
	return out
}

// filter returns the entries of m that keep accepts (all of them for a
// nil keep), in no order.
func filter(m map[string]*Item, keep func(*Item) bool) []*Item {
	var out []*Item
	for _, q := range m {
		if keep == nil || keep(q) {
			out = append(out, q)
		}
	}
	return out
}

// Running returns the running entries, oldest scheduled first. The
// reaper looks at them on every queue or slot change, so this costs what
// runs, not what is queued (at 1,000 runs/s the queue holds the leader's
// lookahead of pending runs, seven seconds at the default session_ttl;
// scanning two seconds of them on every change was a third of the
// leader's CPU).
func (v *View) Running() []*Item {
	v.mu.Lock()
	out := make([]*Item, 0, len(v.running))
	for _, q := range v.running {
		out = append(out, q)
	}
	v.mu.Unlock()
	sortQueued(out)
	return out
}

func sortQueued(out []*Item) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ScheduledAt.Equal(out[j].ScheduledAt) {
			return out[i].ScheduledAt.Before(out[j].ScheduledAt)
		}
		return out[i].RunID < out[j].RunID
	})
}

// Len is how many entries the view holds, pending and running.
func (v *View) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.entries)
}

// Ready closes once the view has read the queue.
func (v *View) Ready() <-chan struct{} { return v.ready }
