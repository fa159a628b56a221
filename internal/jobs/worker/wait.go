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

// parkedRun is a waiting run as it was when it parked.
type parkedRun struct {
	modRev int64
	until  time.Time
}

// park puts q aside until until or the next change; a change that came
// between its last attempt and now sends it straight back.
func (w *Worker) park(q *queue.Item, st *waitState, until time.Time) {
	now := w.d.Clock.Now()
	if closed(st.slotsChanged) || closed(st.queueChanged) {
		until = now
	}
	w.mu.Lock()
	if cur := w.d.Queue.Get(q.Key); cur != nil && cur.ModRev == q.ModRev && cur.State == queue.Pending {
		w.parked[q.Key] = parkedRun{modRev: q.ModRev, until: until}
	}
	w.mu.Unlock()
	w.signal()
}

// unpark sends parked runs back to the pending set: all of them after a
// change, else those whose time has come.
func (w *Worker) unpark(changed bool) {
	now := w.d.Clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, p := range w.parked {
		if changed || !p.until.After(now) {
			delete(w.parked, key)
			heap.Push(&w.pending, due{at: now, key: key, modRev: p.modRev, ranked: true})
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
