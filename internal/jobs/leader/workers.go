package leader

import (
	"encoding/json"
	"slices"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
)

// Workers mirrors members/ (a mirror.Handler): each live replica's session
// lease and the run protocol it advertises. The leader assigns runs to the
// incarnations it lists (keys.Incarnation: a replica on one lease) only
// while every member runs the lean protocol (docs/protocol.md, "Mixed
// versions"), and resolves an incarnation whose member key is gone or on
// another lease.
type Workers struct {
	keys    keys.Layout
	mu      sync.Mutex
	members map[string]member // by replica id
	changed chan struct{}
	ready   chan struct{} // closed by the first Reset
	once    sync.Once
}

type member struct {
	lease    int64
	protocol int
}

// NewWorkers knows no member until its mirror's first Reset.
func NewWorkers(layout keys.Layout) *Workers {
	return &Workers{keys: layout, members: map[string]member{}, changed: make(chan struct{}, 1), ready: make(chan struct{})}
}

// Ready closes once the members were read: before, every worker would
// look dead and no live one could take a dead one's runs.
func (w *Workers) Ready() <-chan struct{} { return w.ready }

// Changed signals (coalescing) that an incarnation may have ended: a member
// key deleted or put on another lease, or the mirror read anew.
func (w *Workers) Changed() <-chan struct{} { return w.changed }

// Reset implements mirror.Handler.
func (w *Workers) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	next := make(map[string]member, len(kvs))
	for _, kv := range kvs {
		next[w.keys.MemberID(string(kv.Key))] = decodeMember(kv)
	}
	w.mu.Lock()
	w.members = next
	w.mu.Unlock()
	w.once.Do(func() { close(w.ready) })
	signal(w.changed)
}

// Apply implements mirror.Handler.
func (w *Workers) Apply(events []*clientv3.Event, _ int64) {
	ended := false
	w.mu.Lock()
	for _, ev := range events {
		id := w.keys.MemberID(string(ev.Kv.Key))
		old, had := w.members[id]
		if ev.Type == clientv3.EventTypeDelete {
			delete(w.members, id)
			ended = ended || had
			continue
		}
		m := decodeMember(ev.Kv)
		ended = ended || had && old.lease != m.lease
		w.members[id] = m
	}
	w.mu.Unlock()
	if ended {
		signal(w.changed)
	}
}

// decodeMember reads what the leader needs of a member key; a value that
// does not decode is a member of no known protocol (an old replica's, as
// far as assigning goes).
func decodeMember(kv *mvccpb.KeyValue) member {
	var v struct {
		Protocol int `json:"protocol"`
	}
	_ = json.Unmarshal(kv.Value, &v)
	return member{lease: kv.Lease, protocol: v.Protocol}
}

// Lean returns the incarnations that run the lean protocol, sorted; ok is
// true only when there is a member and every member runs it (a cluster
// with an older replica keeps queue entries for everything).
func (w *Workers) Lean() (incarnations []string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok = len(w.members) > 0
	for id, m := range w.members {
		if m.protocol < assign.Protocol {
			ok = false
			continue
		}
		incarnations = append(incarnations, keys.Incarnation(id, m.lease))
	}
	slices.Sort(incarnations)
	return incarnations, ok
}

// Alive reports whether worker (an incarnation) is listed: its replica's
// member key exists on its lease.
func (w *Workers) Alive(worker string) bool {
	id, lease, ok := keys.ParseIncarnation(worker)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m, found := w.members[id]
	return found && m.lease == lease
}
