package leader

import (
	"encoding/json"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// Workers mirrors members/ (a mirror.Handler): each live replica's session
// lease and the run protocol it advertises. The leader assigns runs to the
// incarnations it lists (keys.Incarnation: a replica on one lease) only
// while every member runs the lean protocol (docs/protocol.md, "Mixed
// versions"), and resolves an incarnation whose member key is gone or on
// another lease.
type Workers struct {
	members *mirror.Map[string, member] // by replica id
	changed chan struct{}
}

type member struct {
	lease    int64
	protocol int
}

// NewWorkers knows no member until its mirror's first Reset.
func NewWorkers(layout keys.Layout) *Workers {
	w := &Workers{changed: make(chan struct{}, 1)}
	w.members = mirror.NewMap(func(key string) (string, bool) { return layout.MemberID(key), true },
		func(kv *mvccpb.KeyValue, _ member, _ bool) (member, bool) { return decodeMember(kv), true })
	w.members.Subscribe(func(changes []mirror.Change[string, member]) {
		for _, c := range changes {
			if c.Deleted || c.Had && c.Prev.lease != c.Value.lease {
				signal(w.changed)
				return
			}
		}
	})
	return w
}

// Ready closes once the members were read: before, every worker would
// look dead and no live one could take a dead one's runs.
func (w *Workers) Ready() <-chan struct{} { return w.members.Ready() }

// Changed signals (coalescing) that an incarnation may have ended: a member
// key deleted or put on another lease, or the mirror read anew.
func (w *Workers) Changed() <-chan struct{} { return w.changed }

// Reset implements mirror.Handler.
func (w *Workers) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	w.members.Reset(kvs, rev)
	signal(w.changed)
}

// Apply implements mirror.Handler.
func (w *Workers) Apply(events []*clientv3.Event, rev int64) { w.members.Apply(events, rev) }

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
	ok = true
	n := 0
	w.members.Range(func(id string, m member) bool {
		n++
		if m.protocol < assign.Lean {
			ok = false
			return true
		}
		incarnations = append(incarnations, keys.Incarnation(id, m.lease))
		return true
	})
	ok = ok && n > 0
	slices.Sort(incarnations)
	return incarnations, ok
}

// Every reports whether there is a member and every member advertises at
// least protocol (assign.Lean, assign.SuccessApart).
func (w *Workers) Every(protocol int) bool {
	n, ok := 0, true
	w.members.Range(func(_ string, m member) bool {
		n++
		ok = m.protocol >= protocol
		return ok
	})
	return ok && n > 0
}

// Alive reports whether worker (an incarnation) is listed: its replica's
// member key exists on its lease.
func (w *Workers) Alive(worker string) bool {
	id, lease, ok := keys.ParseIncarnation(worker)
	if !ok {
		return false
	}
	m, found := w.members.Get(id)
	return found && m.lease == lease
}
