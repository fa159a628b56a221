package queue

import (
	"log/slog"
	"sort"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
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
// It is a mirror.Handler.
type View struct {
	keys keys.Layout
	log  *slog.Logger

	mu       sync.Mutex
	entries  map[string]*Item // by key
	running  map[string]*Item // the entries in state running, by key
	rev      int64
	ready    chan struct{} // closed at the first Reset
	changed  chan struct{}
	onChange []func(q *Item) // called with each put (pending or running)
	onDelete []func(key string, prev *Item)
}

// NewView is an empty view; mirror.Run fills it.
func NewView(layout keys.Layout, log *slog.Logger) *View {
	return &View{keys: layout, log: log, entries: map[string]*Item{}, running: map[string]*Item{}, ready: make(chan struct{}), changed: make(chan struct{})}
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

// Reset implements mirror.Handler.
func (v *View) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	fresh := make(map[string]*Item, len(kvs))
	running := map[string]*Item{}
	for _, kv := range kvs {
		if q := v.decode(kv); q != nil {
			fresh[q.Key] = q
			if q.State == Running {
				running[q.Key] = q
			}
		}
	}
	v.mu.Lock()
	old := v.entries
	v.entries, v.running, v.rev = fresh, running, rev
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
			delete(v.entries, key)
			delete(v.running, key)
			changes = append(changes, change{key: key, prev: prev})
			continue
		}
		if q := v.decode(ev.Kv); q != nil {
			v.entries[key] = q
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
	var out []*Item
	for _, q := range v.entries {
		if keep == nil || keep(q) {
			out = append(out, q)
		}
	}
	v.mu.Unlock()
	sortQueued(out)
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
