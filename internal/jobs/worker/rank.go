package worker

import (
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// members mirrors the ids of live replicas (members/<id>), so workers can
// agree, without talking, on which of them claims a run first.
type members struct {
	keys keys.Layout
	mu   sync.Mutex
	ids  map[string]bool
}

func newMembers(layout keys.Layout) *members {
	return &members{keys: layout, ids: map[string]bool{}}
}

// Reset implements mirror.Handler.
func (m *members) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	ids := map[string]bool{}
	for _, kv := range kvs {
		ids[m.keys.MemberID(string(kv.Key))] = true
	}
	m.mu.Lock()
	m.ids = ids
	m.mu.Unlock()
}

// Apply implements mirror.Handler.
func (m *members) Apply(events []*clientv3.Event, _ int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ev := range events {
		id := m.keys.MemberID(string(ev.Kv.Key))
		if ev.Type == clientv3.EventTypeDelete {
			delete(m.ids, id)
		} else {
			m.ids[id] = true
		}
	}
}

// rank is self's place in the rendezvous order of live members for key: 0
// for the member that should claim first. A replica not (yet) listed ranks
// 0, so a lone or starting replica never waits.
func (m *members) rank(self, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ids[self] {
		return 0
	}
	type scored struct {
		id    string
		score uint64
	}
	list := make([]scored, 0, len(m.ids))
	for id := range m.ids {
		h := fnv.New64a()
		h.Write([]byte(key))
		h.Write([]byte{0})
		h.Write([]byte(id))
		list = append(list, scored{id, h.Sum64()})
	}
	slices.SortFunc(list, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	for i, s := range list {
		if s.id == self {
			return i
		}
	}
	return 0
}
