package worker

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/slots"
)

// queueRunner claims pending runs from the queue view (runner.go): it
// ranks itself for each, tries it when due (start.go, with claim.go,
// fair.go, overlap.go and rank.go), parks what cannot start yet
// (wait.go), and runs what it claimed through the core. Its goroutines,
// one per run it tries, are the worker's (wg), so the drain waits for
// them.
//
// mu guards pending, parked, waits and behind. The core's lock is taken
// under it (a run's place, and whether its run is active), never the
// other way round: the core tells of a freed place (released) after
// releasing its own.
type queueRunner struct {
	d       Deps
	writes  queue.Writes
	core    *core
	members *members
	fair    fairOrder
	rtt     *claimLatency // the worker's claim round trips: a backup waits longer when etcd is slow
	wg      *sync.WaitGroup
	signal  func() // wakes the worker's loop

	mu      sync.Mutex
	pending dueHeap
	parked  map[string]parkedRun  // by entry key: waiting for a limit, holding no worker
	waits   map[string]*waitState // by entry key: what waiting runs keep between attempts
	// behind holds, by run id, an attempt that came up while the run's
	// previous attempt was still active (its release queued the retry and
	// has not returned): released sends it back to pending.
	behind map[string]due
	// keptLeft are slots this worker kept for retries that no longer
	// wait on them, for the loop to drop (kept.go).
	keptLeft []slots.Kept
}

func newQueueRunner(d Deps, c *core, m *members, rtt *claimLatency, wg *sync.WaitGroup, signal func()) *queueRunner {
	return &queueRunner{d: d, writes: queue.Writes{Client: d.Client, Keys: d.Keys, Batch: d.Batch}, core: c, members: m,
		fair: fairOrder{d: d, rtt: rtt}, rtt: rtt, wg: wg, signal: signal,
		parked: map[string]parkedRun{}, waits: map[string]*waitState{}, behind: map[string]due{}}
}

// follow subscribes to the queue view, then takes the pending runs it
// already holds: a run put in between comes twice, and dispatch drops the
// copy (its entry claimed or its run active by then).
func (qr *queueRunner) follow() {
	qr.d.Queue.Subscribe(qr.onPut, qr.onDelete)
	for _, q := range qr.d.Queue.List(func(q *queue.Item) bool { return q.State == queue.Pending }) {
		qr.onPut(q, nil)
	}
}

// onPut learns of a pending run from the queue view. It is looked at
// first a claim lead before it is due; only then does the worker rank
// itself for it (backupAt), among the members live then: the leader
// queues ticks seconds ahead, and a rank taken at the put would still
// count a member that has left since (a replica stopped, or dead and its
// lease expired) as the run's first worker.
func (qr *queueRunner) onPut(q, prev *queue.Item) {
	qr.noteKeptLeft(q, prev)
	if q.State != queue.Pending {
		return
	}
	qr.mu.Lock()
	heap.Push(&qr.pending, due{at: q.NotBefore.Add(-qr.d.ClaimLead), key: q.Key, modRev: q.ModRev})
	qr.mu.Unlock()
	qr.signal()
}

// onDelete forgets a run that left the queue.
func (qr *queueRunner) onDelete(key string, prev *queue.Item) {
	qr.noteKeptLeft(nil, prev)
	qr.mu.Lock()
	delete(qr.parked, key)
	delete(qr.waits, key)
	qr.mu.Unlock()
}

// backupAt is when this worker tries q, by its rank among the live
// members: at once for its first worker, Backup (and twice the claim round
// trip) later per rank for the others.
func (qr *queueRunner) backupAt(q *queue.Item) time.Time {
	at := q.NotBefore.Add(-qr.d.ClaimLead)
	if q.Hold != nil && q.Hold.Holder == qr.d.ID {
		return at // only the holder can claim with the kept slot
	}
	rank := qr.members.rank(qr.d.ID, rankKey(q), qr.d.Clock.Now())
	return at.Add(time.Duration(rank) * (qr.d.Backup + qr.rtt.backupWait()))
}

// next is how long the loop may sleep at now for the queue path: until
// the first pending run is due (while a place is free), or a parked run's
// turn or a change it waits for. parked says whether runs wait for a
// change of the slots or the queue.
func (qr *queueRunner) next(now time.Time) (time.Duration, bool) {
	wait := time.Hour
	qr.mu.Lock()
	defer qr.mu.Unlock()
	if len(qr.pending) > 0 && qr.core.room() {
		wait = max(qr.pending[0].at.Sub(now), 0)
	}
	for _, p := range qr.parked {
		wait = min(wait, max(p.until.Sub(now), 0))
		if p.changedSince() {
			wait = 0
		}
	}
	return wait, len(qr.parked) > 0
}

// dispatch takes up the pending runs that are due while a place is free,
// each in a goroutine of its own that the drain waits for. mu is held
// throughout, the core's lock under it for each place: an attempt found
// busy goes to behind before the place's release can look there.
func (qr *queueRunner) dispatch(ctx context.Context) {
	now := qr.d.Clock.Now()
	qr.mu.Lock()
	defer qr.mu.Unlock()
	for len(qr.pending) > 0 && !qr.pending[0].at.After(now) && qr.core.room() {
		a := heap.Pop(&qr.pending).(due)
		q := qr.d.Queue.Get(a.key)
		if q == nil || q.ModRev != a.modRev || q.State != queue.Pending {
			continue // claimed, finished or changed since
		}
		if qr.core.busy(q.RunID) {
			// Another attempt of the run is still ending; this one comes
			// back when it has (released). Dropped, nothing brought it back.
			qr.behind[q.RunID] = a
			continue
		}
		if !a.ranked {
			if at := qr.backupAt(q); at.After(now) {
				heap.Push(&qr.pending, due{at: at, key: a.key, modRev: a.modRev, ranked: true})
				continue
			}
		}
		taken, busy := qr.core.take(q.RunID)
		switch {
		case busy:
			qr.behind[q.RunID] = a // taken up since by the assigned runner
			continue
		case !taken:
			heap.Push(&qr.pending, a) // the last place went to an assignment
			return
		}
		delete(qr.parked, q.Key)
		st := qr.waits[q.Key]
		if st == nil {
			st = &waitState{}
			qr.waits[q.Key] = st
		}
		qr.launch(ctx, q, st)
	}
}

// launch tries q, counted active, in a goroutine of its own: it parks
// when q cannot start yet, and gives back its place either way.
func (qr *queueRunner) launch(ctx context.Context, q *queue.Item, st *waitState) {
	qr.wg.Add(1)
	go func() {
		growRunStack()
		defer qr.wg.Done()
		defer qr.core.finish(q.RunID)
		if until, wait := qr.start(ctx, q, st); wait {
			qr.park(q, st, until)
			return
		}
		qr.mu.Lock()
		delete(qr.waits, q.Key)
		qr.mu.Unlock()
	}()
}

// released sends back to pending the attempt of runID that came up
// while the run was active (behind), now that its place is free: the
// core calls it for every place that frees.
func (qr *queueRunner) released(runID string) {
	qr.mu.Lock()
	defer qr.mu.Unlock()
	if a, ok := qr.behind[runID]; ok {
		delete(qr.behind, runID)
		heap.Push(&qr.pending, a)
	}
}
