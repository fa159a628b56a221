package queue

import (
	"log/slog"
	"maps"
	"slices"
	"sort"

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
// It is a mirror.Handler: a mirror.Map of the entries by key, with the
// running ones and an index (index.go) kept in step under the map's lock.
// It resolves each entry's spec from its copy of specs/ (Specs); an entry
// whose spec that copy has not seen yet is resolved when the spec arrives,
// and is meanwhile shown unresolved (a worker then reads the spec itself
// before it claims, Specs.Resolve).
type View struct {
	keys    keys.Layout
	log     *slog.Logger
	specs   *Specs
	entries *mirror.Map[string, *Item] // by key

	// Kept by onChangeLocked, under the map's lock (entries.With).
	running map[string]*Item           // the entries in state running, by key
	index   index                      // the entries by job and by resource
	waiting map[string]map[string]bool // spec key -> the keys of unresolved entries that refer to it
}

// NewView is an empty view; mirror.Run fills it. Entries are resolved
// from specs, whose own mirror fills it.
func NewView(layout keys.Layout, log *slog.Logger, specs *Specs) *View {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &View{keys: layout, log: log, specs: specs, running: map[string]*Item{}, index: newIndex(), waiting: map[string]map[string]bool{}}
	v.entries = mirror.NewMap(func(key string) (string, bool) { return key, true }, v.decodeLocked)
	v.entries.OnChange(v.onChangeLocked)
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

// Subscribe registers callbacks, told of each put (pending or running,
// with the entry it replaced, nil if none) and each delete (with the
// entry deleted) once the view holds it; they run on the mirror
// goroutine, outside the view's lock, and must not block.
func (v *View) Subscribe(put func(q, prev *Item), del func(string, *Item)) {
	v.entries.Subscribe(func(changes []mirror.Change[string, *Item]) {
		for _, c := range changes {
			switch {
			case c.Deleted && del != nil:
				del(c.Key, c.Prev)
			case !c.Deleted && put != nil:
				put(c.Value, c.Prev)
			}
		}
	})
}

// Reset implements mirror.Handler.
func (v *View) Reset(kvs []*mvccpb.KeyValue, rev int64) { v.entries.Reset(kvs, rev) }

// Apply implements mirror.Handler.
func (v *View) Apply(events []*clientv3.Event, rev int64) { v.entries.Apply(events, rev) }

// decodeLocked reads an entry and resolves it from the spec copy. Under
// the map's lock: a spec that arrives meanwhile finds the entry noted as
// waiting for it (specsArrived takes the lock).
func (v *View) decodeLocked(kv *mvccpb.KeyValue, _ *Item, _ bool) (*Item, bool) {
	e, err := Decode(kv.Value)
	if err != nil {
		v.log.Warn("ignoring unreadable queue entry", "key", string(kv.Key), "err", err)
		return nil, false
	}
	q := &Item{Entry: e, Key: string(kv.Key), ModRev: kv.ModRevision}
	if sp := v.specs.lookup(q.SpecKey(v.keys)); sp != nil && !q.Resolved() {
		q = &Item{Entry: q.withSpec(sp), Key: q.Key, ModRev: q.ModRev}
	}
	return q, true
}

// onChangeLocked keeps running, index and waiting in step with the
// entries.
func (v *View) onChangeLocked(c mirror.Change[string, *Item]) {
	if c.Had {
		v.index.remove(c.Prev)
		v.forgetLocked(c.Prev)
		delete(v.running, c.Key)
	}
	if c.Deleted {
		return
	}
	q := c.Value
	v.index.add(q)
	if q.State == Running {
		v.running[c.Key] = q
	}
	if !q.Resolved() {
		key := q.SpecKey(v.keys)
		w := v.waiting[key]
		if w == nil {
			w = map[string]bool{}
			v.waiting[key] = w
		}
		w[q.Key] = true
	}
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
	v.entries.With(func(get func(string) (*Item, bool), set func(string, *Item)) {
		for _, sk := range specKeys {
			w := v.waiting[sk]
			sp := v.specs.lookup(sk)
			if w == nil || sp == nil {
				continue // nothing waits, or deleted again already: still waiting
			}
			for _, key := range slices.Collect(maps.Keys(w)) {
				q, _ := get(key)
				if q == nil || q.Resolved() || q.SpecKey(v.keys) != sk {
					continue
				}
				set(key, &Item{Entry: q.withSpec(sp), Key: q.Key, ModRev: q.ModRev}) // resolved, it names its resources
			}
			delete(v.waiting, sk)
		}
	})
}

// Changed closes at the next change of the view.
func (v *View) Changed() <-chan struct{} { return v.entries.Changed() }

// Get returns the entry at key as last seen.
func (v *View) Get(key string) *Item {
	q, _ := v.entries.Get(key)
	return q
}

// Find returns the entry of runID.
func (v *View) Find(runID string) *Item {
	return v.Get(v.keys.Entry(runs.JobOf(runID), runID))
}

// List returns entries matching keep, oldest scheduled first. keep runs
// under the view's lock and must not call the view.
func (v *View) List(keep func(*Item) bool) []*Item {
	var out []*Item
	v.entries.Range(func(_ string, q *Item) bool {
		if keep == nil || keep(q) {
			out = append(out, q)
		}
		return true
	})
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
	var out []*Item
	v.entries.With(func(func(string) (*Item, bool), func(string, *Item)) {
		out = make([]*Item, 0, len(v.running))
		for _, q := range v.running {
			out = append(out, q)
		}
	})
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
func (v *View) Len() int { return v.entries.Len() }

// Ready closes once the view has read the queue.
func (v *View) Ready() <-chan struct{} { return v.entries.Ready() }
