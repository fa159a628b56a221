package worker

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/rendezvous"
)

// members mirrors the ids of live replicas (members/<id>), so workers can
// agree, without talking, on which of them claims a run first.
//
// A member listed is not always alive: a replica killed keeps its key
// until its lease expires, a session TTL later, and each run ranked first
// to it waits for a backup's turn (Backup, 250ms) meanwhile; for a job
// @every 100ms that is a late run whose slot its next ticks find taken.
// So a member that let a run pass its turn (suspect) is passed over in
// this worker's ranking for a session TTL, or until it writes its key
// again or its key goes. Only the order changes: a wrong suspicion costs
// claims that lose their compare, never a second run.
type members struct {
	ids      *mirror.Map[string, int64] // id -> its key's ModRevision
	mu       sync.Mutex
	suspects map[string]time.Time // id -> passed over until then
}

// newMembers lists no member until its mirror's first read. A member's key
// is written by that member only: a put (a new ModRevision) is a sign of
// life, and ends a suspicion; so does the key's going.
func newMembers(layout keys.Layout) *members {
	m := &members{suspects: map[string]time.Time{}}
	m.ids = mirror.NewMap(func(key string) (string, bool) { return layout.MemberID(key), true },
		func(kv *mvccpb.KeyValue, _ int64, _ bool) (int64, bool) { return kv.ModRevision, true })
	m.ids.Subscribe(func(changes []mirror.Change[string, int64]) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, c := range changes {
			if c.Deleted || !c.Had || c.Value != c.Prev {
				delete(m.suspects, c.Key)
			}
		}
	})
	return m
}

// Reset implements mirror.Handler.
func (m *members) Reset(kvs []*mvccpb.KeyValue, rev int64) { m.ids.Reset(kvs, rev) }

// Apply implements mirror.Handler.
func (m *members) Apply(events []*clientv3.Event, rev int64) { m.ids.Apply(events, rev) }

// rank is self's place in the rendezvous order of live members for key at
// now: 0 for the member that should claim first. A replica not (yet)
// listed ranks 0, so a lone or starting replica never waits.
func (m *members) rank(self, key string, now time.Time) int {
	if _, ok := m.ids.Get(self); !ok {
		return 0
	}
	ids := m.ids.Keys()
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Index(m.orderLocked(ids, self, key, now), self)
}

// passedOver marks the members ranked before self for key at now as
// suspects until until, and returns those it newly marked: self claimed
// the run at its backup turn, so none of them had claimed it at theirs.
func (m *members) passedOver(self, key string, now, until time.Time) []string {
	if _, ok := m.ids.Get(self); !ok {
		return nil
	}
	ids := m.ids.Keys()
	m.mu.Lock()
	defer m.mu.Unlock()
	var marked []string
	for _, id := range m.orderLocked(ids, self, key, now) {
		if id == self {
			break
		}
		m.suspects[id] = until
		marked = append(marked, id)
	}
	return marked
}

// orderLocked is the rendezvous order of the members ids for key, those
// suspect at now left out (never self).
func (m *members) orderLocked(ids []string, self, key string, now time.Time) []string {
	kept := make([]string, 0, len(ids))
	for _, id := range ids {
		if until, ok := m.suspects[id]; ok && id != self {
			if until.After(now) {
				continue
			}
			delete(m.suspects, id)
		}
		kept = append(kept, id)
	}
	return rendezvous.Top(kept, key, len(kept))
}

// rankWithout is self's place in the rendezvous order of live members for
// key, owner left out: 0 for the first backup.
func (m *members) rankWithout(self, owner, key string, now time.Time) int {
	ids := m.ids.Keys()
	m.mu.Lock()
	defer m.mu.Unlock()
	order := slices.DeleteFunc(m.orderLocked(ids, self, key, now), func(id string) bool { return id == owner })
	return max(0, slices.Index(order, self))
}

// suspect reports whether id is passed over at now.
func (m *members) suspect(id string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.suspects[id]
	return ok && until.After(now)
}

// suspectFor passes id over until until; it reports whether id was not
// suspect at now.
func (m *members) suspectFor(id string, now, until time.Time) bool {
	if _, listed := m.ids.Get(id); !listed {
		return false // gone, or never listed: nothing to pass over
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.suspects[id]
	m.suspects[id] = until
	return !ok || !prev.After(now)
}

// gone reports whether id has no member key while self has one (before
// the view lists self, nobody is known gone).
func (m *members) gone(self, id string) bool {
	if _, listed := m.ids.Get(self); !listed {
		return false
	}
	_, listed := m.ids.Get(id)
	return !listed
}

// noteClaimed is told of each run this worker claimed: one it claimed at
// a backup's turn (or took over, overdue) without having been refused
// before was let pass by every member ranked before it, which this worker
// then passes over for a session TTL (see members). A run that waited for
// a limit proves nothing: its first worker may be waiting for it too.
func (qr *queueRunner) noteClaimed(q *queue.Item, st *waitState) {
	if st.last != nil || q.Hold != nil {
		return
	}
	now := qr.d.Clock.Now()
	ttl := qr.d.Config().Cluster.SessionTTL.D()
	for _, id := range qr.members.passedOver(qr.d.ID, rankKey(q), now, now.Add(ttl)) {
		qr.d.Log.Info("a member let a run ranked to it pass: ranked last here until it shows life or a session TTL passes",
			"member", id, "job", q.Job, "run_id", q.RunID, "for", ttl)
	}
}

// rankKey is what a run's workers rank themselves by: its entry and
// attempt.
func rankKey(q *queue.Item) string { return q.Key + "#" + strconv.Itoa(q.Attempt) }
