package worker

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// peerView is the assignments of the other replicas that no chunk has
// claimed from yet, as mirrored from keys.Assignments and keys.Claimed:
// what a backup may take over (assigned_takeover.go). Values are kept as
// read and decoded only for a take-over, so a replica pays little for
// its peers' assignments: an event per assignment and chunk, shared by
// their runs.
type peerView struct {
	keys   keys.Layout
	clock  clockwork.Clock
	own    string // keys.ReplicaAssignments of this replica: not a peer's
	signal func()
	// claimLead is the least lead a worker claims an assignment with
	// (Deps.ClaimLead): one that has written no marker since that long
	// before an assignment's instant is silent (see due).
	claimLead time.Duration

	mu  sync.Mutex
	all map[string]*peerAssignment // by key
	// instants is all by instant: what a scan walks.
	instants peerInstants
	// markers are the claim markers, by marker key, each with the prefix
	// of its assignment's markers (keys.AssignmentClaimed) and whether it
	// is ahead (assign.MarkerAhead); claimed counts them by that prefix,
	// started those not ahead.
	markers map[string]peerMarker
	claimed map[string]int
	started map[string]int
	// active is, by worker, when this view last saw it write a claim
	// marker: a worker that claims is alive, and one behind is not
	// helped by losing its assignments (see due).
	active map[string]time.Time
	// changed: an assignment or marker came or went since due last
	// looked; checkAt is when it must look again regardless (the
	// earliest turn or lateness it saw). Between the two, due answers
	// without a scan: the worker's loop asks at every wake. scanned is
	// when due last scanned: changes within peerScanGap of it wait for
	// the gap's end (see due).
	changed bool
	checkAt time.Time
	scanned time.Time
}

// peerScanGap is the least time between two scans that changes cause. At
// a burst every marker and assignment of the peers is a change, and a
// scan per change read every peer assignment hundreds of times a second
// (3% of a replica at 2,000 runs/s); a turn comes a fifth of Backup
// (50ms) after an instant at the soonest, so a scan this much later
// takes nothing over later than its turn by more than the gap.
const peerScanGap = 10 * time.Millisecond

// peerMarker is one claim marker as the view keeps it.
type peerMarker struct {
	prefix string
	ahead  bool
}

// maxActive is how many workers' last claims the view keeps before it
// forgets those a minute old (incarnations of replicas that restarted).
const maxActive = 64

// peerAssignment is one peer assignment as read.
type peerAssignment struct {
	key, worker, group string
	owner              string // the replica id of worker (keys.ParseIncarnation)
	claimedKey         string // keys.AssignmentClaimed of it
	at                 time.Time
	value              []byte
	modRevision        int64
	// from is when its worker could start claiming it: its instant, or
	// when this view first saw it if later (an assignment moved or taken
	// over late is due on arrival, and its new worker gets a backup's
	// turn before it is suspected).
	from time.Time
	// turn is when this replica may take it over (zero: not judged yet);
	// tried is the ModRevision it last tried to take over.
	turn  time.Time
	tried int64
	// ahead: chunks claimed from it, all ahead of their start mark
	// (assign.Store.StealAhead takes it over; Steal one with none).
	ahead bool
}

func newPeerView(layout keys.Layout, clock clockwork.Clock, id string, claimLead time.Duration, signal func()) *peerView {
	return &peerView{keys: layout, clock: clock, own: layout.ReplicaAssignments(id), signal: signal, claimLead: claimLead,
		all: map[string]*peerAssignment{}, markers: map[string]peerMarker{}, claimed: map[string]int{}, started: map[string]int{}, active: map[string]time.Time{}}
}

// Reset implements mirror.Handler for keys.Assignments.
func (v *peerView) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	v.mu.Lock()
	v.all, v.instants = map[string]*peerAssignment{}, peerInstants{}
	for _, kv := range kvs {
		v.putLocked(kv)
	}
	v.mu.Unlock()
	v.signal()
}

// Apply implements mirror.Handler for keys.Assignments.
func (v *peerView) Apply(events []*clientv3.Event, _ int64) {
	v.mu.Lock()
	for _, ev := range events {
		if ev.Type == clientv3.EventTypeDelete {
			if p := v.all[string(ev.Kv.Key)]; p != nil {
				delete(v.all, p.key)
				v.instants.remove(p)
			}
			v.changed = true
			continue
		}
		v.putLocked(ev.Kv)
	}
	v.mu.Unlock()
	v.signal()
}

func (v *peerView) putLocked(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	if strings.HasPrefix(key, v.own) {
		return
	}
	worker, at, group, ok := v.keys.ParseAssignment(key)
	if !ok {
		return
	}
	from := at
	if now := v.clock.Now(); now.After(at) {
		from = now
	}
	if prev := v.all[key]; prev != nil && prev.from.Before(from) {
		from = prev.from
	}
	owner, _, _ := keys.ParseIncarnation(worker)
	p := &peerAssignment{key: key, worker: worker, owner: owner, group: group, at: at, from: from, value: kv.Value, modRevision: kv.ModRevision,
		claimedKey: v.keys.AssignmentClaimed(worker, at, group)}
	v.all[key] = p
	v.instants.put(p)
	v.changed = true
}

// Markers is the mirror.Handler of keys.Claimed.
func (v *peerView) Markers() mirror.Handler { return peerMarkers{v} }

type peerMarkers struct{ v *peerView }

func (m peerMarkers) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	v := m.v
	v.mu.Lock()
	v.markers, v.claimed, v.started, v.active = map[string]peerMarker{}, map[string]int{}, map[string]int{}, map[string]time.Time{}
	v.changed = true
	for _, kv := range kvs {
		v.markLocked(kv)
	}
	v.mu.Unlock()
}

func (m peerMarkers) Apply(events []*clientv3.Event, _ int64) {
	v := m.v
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, ev := range events {
		key := string(ev.Kv.Key)
		if ev.Type != clientv3.EventTypeDelete {
			v.markLocked(ev.Kv)
			continue
		}
		v.unmarkLocked(key)
	}
}

// unmarkLocked forgets the marker at key.
func (v *peerView) unmarkLocked(key string) {
	m, ok := v.markers[key]
	if !ok {
		return
	}
	delete(v.markers, key)
	if v.claimed[m.prefix]--; v.claimed[m.prefix] <= 0 {
		delete(v.claimed, m.prefix)
	}
	if !m.ahead {
		if v.started[m.prefix]--; v.started[m.prefix] <= 0 {
			delete(v.started, m.prefix)
		}
	}
}

func (v *peerView) markLocked(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	worker, at, group, _, ok := v.keys.ParseClaimMarker(key)
	if !ok {
		return
	}
	now := v.clock.Now()
	if len(v.active) > maxActive {
		for w, at := range v.active {
			if now.Sub(at) > time.Minute {
				delete(v.active, w)
			}
		}
	}
	v.active[worker] = now
	v.changed = true
	v.unmarkLocked(key) // a start mark rewrites a marker ahead
	m := peerMarker{prefix: v.keys.AssignmentClaimed(worker, at, group), ahead: assign.MarkerAhead(kv.Value)}
	v.markers[key] = m
	v.claimed[m.prefix]++
	if !m.ahead {
		v.started[m.prefix]++
	}
}

// due returns the peer assignments whose take-over turn has come by now,
// none marked started (claimed from at or after the instant, or marked at
// it) and none tried at their revision, marking them tried;
// the earliest turn still to come (zero: none); and the workers that let
// one pass grace after it was theirs to claim (from), whoever's turn it is
// now (by replica id). turn judges an assignment's turn once, at its
// from, and is told whether its worker is silent: it had the assignment
// before its instant, has not claimed from it, and has written no marker
// since a claim lead before it, when a live worker claims at the latest
// (a worker killed then; one alive and claiming for others is behind,
// not silent). One that claimed it ahead is not judged silent: at a burst
// a live owner's start marks can come more than a fifth of Backup after
// the instant, and backups would take its claims over (a read of the
// slots and a move each, then the claims again) when etcd is busiest
// (suspected in a burst step that missed 28 % of 2,000 jobs' ticks).
func (v *peerView) due(now time.Time, grace time.Duration, turn func(p *peerAssignment, silent bool) time.Time) (due []peerAssignment, next time.Time, late []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	notDue := v.checkAt.IsZero() || now.Before(v.checkAt)
	if !v.changed && notDue {
		return nil, v.checkAt, nil
	}
	if gapEnd := v.scanned.Add(peerScanGap); v.changed && notDue && now.Before(gapEnd) {
		return nil, sooner(v.checkAt, gapEnd), nil
	}
	defer func() { v.changed, v.checkAt, v.scanned = false, next, now }()
	// Those of instants to come are judged at their instant: the first
	// is when to look again, at the latest.
	coming := v.instants.upTo(now, func(p *peerAssignment) {
		if p.tried == p.modRevision || v.started[p.claimedKey] > 0 {
			return
		}
		if v.active[p.worker].After(p.from) {
			// Its worker claimed since this one became due: alive and
			// behind, not dead. Taking its work over would only move
			// the backlog, at a transaction and an event a replica each.
			return
		}
		if lateAt := p.from.Add(grace); !now.Before(lateAt) {
			if !slices.Contains(late, p.owner) {
				late = append(late, p.owner)
			}
		} else {
			next = sooner(next, lateAt)
		}
		if p.turn.IsZero() {
			if now.Before(p.from) {
				next = sooner(next, p.from) // judged then: whether its worker claimed by then
				return
			}
			p.turn = turn(p, v.silentLocked(p))
		}
		if p.turn.After(now) {
			next = sooner(next, p.turn)
			return
		}
		p.tried, p.ahead = p.modRevision, v.claimed[p.claimedKey] > 0
		due = append(due, *p)
	})
	if !coming.IsZero() {
		next = sooner(next, coming)
	}
	return due, next, late
}

// silentLocked reports whether p's worker is silent for it (see due).
func (v *peerView) silentLocked(p *peerAssignment) bool {
	return p.from.Equal(p.at) && v.claimed[p.claimedKey] == 0 && !v.active[p.worker].After(p.at.Add(-v.claimLead))
}

// sooner is the earlier of next and t, next being zero when there is none.
func sooner(next, t time.Time) time.Time {
	if next.IsZero() || t.Before(next) {
		return t
	}
	return next
}

// rejudge forgets the turns of the assignments of replica id's
// incarnations: it became suspect, and its next ones come earlier.
func (v *peerView) rejudge(id string) {
	v.mu.Lock()
	for _, p := range v.all {
		if p.owner == id {
			p.turn = time.Time{}
		}
	}
	v.changed = true
	v.mu.Unlock()
	v.signal()
}

// membersChanged rejudges the turns of the assignments of each replica
// whose member key went: its lease ended, it is gone (takeOverTurn).
func (v *peerView) membersChanged(changes []mirror.Change[string, int64]) {
	for _, c := range changes {
		if c.Deleted {
			v.rejudge(c.Key)
		}
	}
}
