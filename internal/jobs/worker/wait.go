package worker

import (
	"container/heap"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// A run that cannot start yet waits in etcd, as its pending entry, not in
// a goroutine: it is parked here, holding none of the replica's
// max_parallel, and goes back to the pending set when the slots or the
// queue change (a release, an elder claimed) or at its time (its starting
// deadline, a rate window's next free place, the end of its fair wait).
// Before, a waiting run kept its worker, and with max_parallel 2 one queued
// job cost another job its ticks.

// parkedRun is a waiting run as it was when it parked, with the views'
// change channels as they were before its last attempt.
type parkedRun struct {
	modRev                     int64
	until                      time.Time
	slotsChanged, queueChanged <-chan struct{}
}

// changedSince reports whether a view changed after the run's last
// attempt. The dispatch loop looks at this for every parked run after it
// takes its own change channels: a change between the attempt and the
// loop's take closed only the run's, and waiting on the loop's alone
// missed it (the run then waited for its time, the job's next tick; seen
// on a fake clock as a run that never started after its elder ended).
func (p parkedRun) changedSince() bool { return closed(p.slotsChanged) || closed(p.queueChanged) }

// park puts q aside until until or the next change; a change that came
// between its last attempt and now sends it straight back.
func (qr *queueRunner) park(q *queue.Item, st *waitState, until time.Time) {
	qr.mu.Lock()
	if cur := qr.d.Queue.Get(q.Key); cur != nil && cur.ModRev == q.ModRev && cur.State == queue.Pending {
		qr.parked[q.Key] = parkedRun{modRev: q.ModRev, until: until, slotsChanged: st.slotsChanged, queueChanged: st.queueChanged}
	}
	qr.mu.Unlock()
	qr.signal()
}

// unpark sends parked runs back to the pending set: all of them after a
// change, else those whose time has come.
func (qr *queueRunner) unpark(changed bool) {
	now := qr.d.Clock.Now()
	qr.mu.Lock()
	defer qr.mu.Unlock()
	for key, p := range qr.parked {
		if changed || !p.until.After(now) || p.changedSince() {
			delete(qr.parked, key)
			heap.Push(&qr.pending, due{at: now, key: key, modRev: p.modRev, ranked: true})
		}
	}
}

func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
