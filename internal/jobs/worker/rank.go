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
		list = append(list, scored{id, rendezvous(key, id)})
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

// rendezvous is member id's score for key: the highest claims first.
//
// FNV-1a alone is not enough here. Member ids differ in their last bytes
// (r1, r2, r3; a pod name's suffix), and FNV-1a's last steps, (h^b)*prime,
// leave the order of the members' hashes decided by a few low bits of the
// key's hash, which the last bytes of the key decide: every job's run due
// at one instant ranked the same member first, or split on one bit of the
// job's name, so one replica took a whole instant's claims (and all of
// them waited a backup's delay when it died). A 64-bit finalizer
// (MurmurHash3's fmix64) over the FNV hash makes every bit of the key and
// the id count in the order.
func rendezvous(key, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return fmix64(h.Sum64())
}

// fmix64 is MurmurHash3's 64-bit finalizer: each input bit flips each
// output bit with probability about one half.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
