package worker

import (
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// The lean run protocol (docs/protocol.md): the leader assigns a tick's
// runs to one incarnation of a replica (assign/<id>.<lease>/<instant>/
// <group>); the worker watches its replica's assignments, claims their runs
// a claim lead before they are due, runs them as it runs queued ones, and
// deletes each assignment once its runs are settled.

// Assignments is the view of this replica's assignments the worker claims
// from (keys.ReplicaAssignments).
func (w *Worker) Assignments() mirror.Handler { return w.runner.view }

// assignedView is the replica's assignments, of every incarnation, as
// mirrored from keys.ReplicaAssignments: a mirror.Handler.
type assignedView struct {
	keys   keys.Layout
	signal func()
	// config and claimLead say how long before its instant an assignment
	// is taken up (leadOf, assigned_lead.go).
	config    func() *config.Config
	claimLead time.Duration

	mu  sync.Mutex
	all map[string]*assigned // by key
	// waiting are the keys of all's assignments not taken up: what next
	// and take look at. A worker behind holds many taken assignments
	// waiting for room under max_parallel; scanning them on every wake
	// of its loop cost it more than its runs.
	waiting map[string]bool
	// first is the earliest instant in waiting (zero: none), recomputed
	// when stale: the worker's loop asks for it at every wake.
	first time.Time
	stale bool
}

// assigned is one assignment as read, and whether the worker took it up.
// retake: a claim of an older version found it written anew before it
// claimed anything, so this version is to be taken up (once it is here).
type assigned struct {
	assign.Stored
	taken  bool
	retake bool
	lead   time.Duration // taken up this long before its instant
}

// takeAt is when a is to be taken up.
func (a *assigned) takeAt() time.Time { return a.At.Add(-a.lead) }

func newAssignedView(layout keys.Layout, signal func(), cfg func() *config.Config, claimLead time.Duration) *assignedView {
	return &assignedView{keys: layout, signal: signal, config: cfg, claimLead: claimLead, all: map[string]*assigned{}, waiting: map[string]bool{}}
}

// Reset replaces the view; an assignment already taken up stays taken.
func (v *assignedView) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	v.mu.Lock()
	old := v.all
	v.all = make(map[string]*assigned, len(kvs))
	v.waiting = map[string]bool{}
	v.stale = true
	for _, kv := range kvs {
		if a := v.decode(kv); a != nil {
			if prev := old[a.Key(v.keys)]; prev != nil && prev.CreateRevision == a.CreateRevision {
				newer := a.ModRevision > prev.ModRevision
				a.taken = prev.taken && !(prev.retake && newer)
				a.retake = prev.retake && !newer
			}
			v.all[a.Key(v.keys)] = a
			v.noteLocked(a.Key(v.keys), a)
		}
	}
	v.mu.Unlock()
	v.signal()
}

// noteLocked keeps waiting in step with a's taken.
func (v *assignedView) noteLocked(key string, a *assigned) {
	if a.taken {
		delete(v.waiting, key)
		v.stale = true
	} else {
		v.waiting[key] = true
		v.stale = true
	}
}

// Apply adds new assignments and forgets deleted ones.
func (v *assignedView) Apply(events []*clientv3.Event, _ int64) {
	v.mu.Lock()
	for _, ev := range events {
		key := string(ev.Kv.Key)
		if ev.Type == clientv3.EventTypeDelete {
			delete(v.all, key)
			delete(v.waiting, key)
			v.stale = true
			continue
		}
		prev := v.all[key]
		if prev != nil && prev.ModRevision >= ev.Kv.ModRevision {
			continue
		}
		if a := v.decode(ev.Kv); a != nil {
			// Written anew (a leader's withdrawal): a version not taken
			// up yet is replaced; one taken up is taken up again only
			// once its claim found it changed (retake).
			if prev != nil && prev.CreateRevision == a.CreateRevision && prev.taken && !prev.retake {
				a.taken = true
			}
			v.all[key] = a
			v.noteLocked(key, a)
		}
	}
	v.mu.Unlock()
	v.signal()
}

func (v *assignedView) decode(kv *mvccpb.KeyValue) *assigned {
	a, err := assign.Decode(v.keys, string(kv.Key), kv.Value)
	if err != nil {
		return nil // not ours to judge: the leader wrote it; Resolve deals with it
	}
	return &assigned{Stored: assign.Stored{Assignment: a, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}, lead: v.leadOf(a)}
}

// retake takes up anew the assignment at key written after the version
// of ModRevision rev a claim found gone: now if the view has it, else when
// it comes.
func (v *assignedView) retake(key string, rev int64) {
	v.mu.Lock()
	if a := v.all[key]; a != nil {
		if a.ModRevision > rev {
			a.taken = false
			v.waiting[key] = true
			v.stale = true
		} else {
			a.retake = true
		}
	}
	v.mu.Unlock()
	v.signal()
}

// next is when the earliest assignment not taken up is to be taken up
// (the zero time when there is none).
func (v *assignedView) next() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.nextLocked()
}

func (v *assignedView) nextLocked() time.Time {
	if v.stale {
		v.first, v.stale = time.Time{}, false
		for key := range v.waiting {
			if at := v.all[key].takeAt(); v.first.IsZero() || at.Before(v.first) {
				v.first = at
			}
		}
	}
	return v.first
}

// untaken marks taken and returns worker's assignments not taken up yet.
func (v *assignedView) untaken(worker string) []assign.Stored {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []assign.Stored
	for key := range v.waiting {
		if a := v.all[key]; a.Worker == worker {
			a.taken = true
			delete(v.waiting, key)
			v.stale = true
			out = append(out, a.Stored)
		}
	}
	return out
}

// take marks taken and returns the assignments to take up by now,
// earliest first.
func (v *assignedView) take(now time.Time) []assign.Stored {
	v.mu.Lock()
	defer v.mu.Unlock()
	if first := v.nextLocked(); first.IsZero() || first.After(now) {
		return nil // none due: no scan (the worker's loop asks at every wake)
	}
	var due []assign.Stored
	for key := range v.waiting {
		if a := v.all[key]; !a.takeAt().After(now) {
			a.taken = true
			delete(v.waiting, key)
			v.stale = true
			due = append(due, a.Stored)
		}
	}
	slices.SortFunc(due, func(a, b assign.Stored) int { return a.At.Compare(b.At) })
	return due
}
