package worker

import (
	"container/heap"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Fair order: among runs waiting for the same limit (a job's slots, a
// key's, a resource's, a rate window), the one due first is admitted
// first, cluster-wide. Every worker sees the whole queue, so before it
// claims a run it counts, for each limit the run needs, the elders: pending
// runs that need that limit too and are due before it. When a limit has
// no more room than its elders need, the run yields as if the limit were
// full (its overlap policy decides: wait, or skip). Without this,
// whichever worker's watch fired first after a release won, and two jobs
// on identical schedules sharing a limit-1 resource got 26 and 12 runs in
// the same minute.
//
// Ties between equal due times are broken by a hash of the run id and
// attempt, not by name: a name order would let the same job win every
// tie. The loser of a tie is the elder at the next release, so shares even
// out.

// turnBound is how long a run off the schedule waits for its turn after a
// late elder took the room it found free (turnEnd); a scheduled run waits
// until its job's next tick.
const turnBound = 2 * time.Second

// fairRecheck is when a run that yields looks again at the latest: the
// views' changes wake it sooner.
const fairRecheck = time.Second

// limit is one thing a run needs room in.
type limit struct {
	id   string // names the limit (not a key): runs that need the same limit share it
	full slots.FullError
	rate *slots.Rate
}

// limitsOf are the limits a run of e needs.
func limitsOf(e *queue.Entry) []limit {
	group := keys.SlotGroup(e.Job, e.ConcurrencyKey)
	kind := slots.LimitJob
	if e.ConcurrencyKey != "" {
		kind = slots.LimitKey
	}
	out := []limit{{id: "slot " + group, full: slots.FullError{Limit: kind, Name: group, Slots: e.Spec.MaxConcurrency}}}
	res, rates := limits(e)
	for _, r := range res {
		out = append(out, limit{id: "resource " + r.Name, full: slots.FullError{Limit: slots.LimitResource, Name: r.Name, Slots: r.Limit}})
	}
	for _, r := range rates {
		out = append(out, limit{id: "rate " + r.Scope + " " + r.Name, full: slots.FullError{Limit: slots.LimitRate, Name: r.Window()}, rate: &r})
	}
	return out
}

func tieBreak(e *queue.Entry) uint64 {
	h := fnv.New64a()
	h.Write([]byte(e.RunID))
	h.Write([]byte("#" + strconv.Itoa(e.Attempt)))
	return h.Sum64()
}

// older reports whether a is due before b.
func older(a, b *queue.Entry) bool {
	if !a.NotBefore.Equal(b.NotBefore) {
		return a.NotBefore.Before(b.NotBefore)
	}
	ha, hb := tieBreak(a), tieBreak(b)
	if ha != hb {
		return ha < hb
	}
	return a.RunID < b.RunID
}

// fairOrder finds what a run's elders hold it back from (yieldTo): it
// reads the queue and the slots views, and owns no state of its own.
type fairOrder struct {
	d   Deps
	rtt *claimLatency // the worker's claim round trips, which the wait before an elder is overdue counts (noteOverdue)
}

// minTakeover is added to a worker's claim lead and backup wait before it
// takes over a late elder (overdue).
const minTakeover = 25 * time.Millisecond

// elders is what q's fair order found among the pending runs.
type elders struct {
	// full is the limit q must leave to its elders, nil when none.
	full *slots.FullError
	// why is what records and logs name for it: a limit of q's with no
	// room at all when there is one (what its elders wait for too: a rate
	// window, while the job's free slot is merely left to them), else full.
	why *slots.FullError
	// room is what the view shows free of full (no more than its elders
	// need); free: it had room, and an elder due strictly before q waits
	// for it (see yieldTo).
	room int
	free bool
	// overdue is the job's (or key's) eldest pending run that its first
	// worker should have claimed by now and did not; retry is when q's
	// eldest such run becomes overdue, if none is yet.
	overdue *queue.Item
	retry   time.Time
}

// yieldTo returns the limit q must leave to its elders, or nil: a limit
// whose room (per the slots view) is no more than its elders need, however
// long q has waited (docs/design-admission.md#fair-order: strict). Only an elder that could
// start with that room counts: one whose other limits (those q does not
// need, such as its own job's slots) have room too. An elder stuck behind
// a limit of its own would hold q back for as long as that limit stays
// full, and fairness must not cost liveness; the order among runs that
// need the same limits, the waiters of one job or key, is strict. free
// says the limit had room and an elder due strictly before q still waits
// for it: an elder late (claimed by a backup worker after its first choice
// died), which takes the limit after q came due; q then takes its turn
// after it instead of being skipped for an overlap that was not there when
// it came due. Runs due together (a burst of triggers) are not free: the
// overlap policy decides among them as before.
//
// Elders are pending runs due before q; a run queued ahead of its due
// time is never an elder of one due before it, so the leader's lookahead
// adds none.
//
// It also finds q's job's (or key's) eldest pending run that is overdue
// (see noteOverdue); the worker about to claim q claims it first instead
// (start), so the job's ticks start in order and about on time.
func (f *fairOrder) yieldTo(q *queue.Item, now time.Time) elders {
	var out elders
	mine := limitsOf(q.Entry)
	index := make(map[string]int, len(mine))
	for i, l := range mine {
		index[l.id] = i
	}
	start := now
	if start.Before(q.NotBefore) {
		start = q.NotBefore
	}
	room := f.roomOf(start)
	elders := make([]int, len(mine))
	late := make([]bool, len(mine)) // an elder due strictly before q
	// Only runs of q's job or naming one of its resources can need a
	// limit in common with it (the view's index): every claim asks, and
	// the queue holds seconds of every job's ticks queued ahead.
	f.d.Queue.EachRelated(q.Entry, func(o *queue.Item) {
		// An entry whose spec no replica has yet waits for it, not for a
		// limit: it can start no sooner than it is resolved, so it holds
		// nobody back (its worker records it missed at its deadline).
		if o.State != queue.Pending || o.Key == q.Key || !o.Resolved() || !older(o.Entry, q.Entry) {
			return
		}
		theirs := limitsOf(o.Entry)
		for _, l := range theirs {
			if _, shared := index[l.id]; !shared && room(l) == 0 {
				return // stuck behind a limit q does not need
			}
		}
		for _, l := range theirs {
			if i, ok := index[l.id]; ok {
				elders[i]++
				late[i] = late[i] || o.NotBefore.Before(q.NotBefore)
			}
		}
		f.noteOverdue(&out, q, o, now)
	})
	if out.overdue != nil && noRoom(mine, room) != nil {
		// Only a run nothing holds back is overdue: one that waits for a
		// limit waits on its worker, and is no one's to take over.
		out.overdue = nil
	}
	for i, l := range mine {
		if elders[i] == 0 {
			continue
		}
		if r := room(l); r <= elders[i] {
			full := l.full
			out.full, out.room, out.free, out.why = &full, r, r > 0 && late[i], noRoom(mine, room)
			if out.why == nil {
				out.why = &full
			}
			return out
		}
	}
	return out
}

// roomOf returns the room of a limit in the slots view for a run starting
// at start, each limit read once per call of yieldTo.
func (f *fairOrder) roomOf(start time.Time) func(limit) int {
	seen := map[string]int{}
	return func(l limit) int {
		if r, ok := seen[l.id]; ok {
			return r
		}
		var r int
		switch {
		case l.rate != nil:
			r = f.d.Slots.FreePlaces(*l.rate, start)
		case l.full.Limit == slots.LimitResource:
			r = f.d.Slots.Free(slots.ResourceSlot, l.full.Name, l.full.Slots)
		default:
			r = f.d.Slots.Free(slots.JobSlot, l.full.Name, l.full.Slots)
		}
		seen[l.id] = r
		return r
	}
}

// noteOverdue records o in out when it is q's job's (or key's) eldest
// pending run due before q and not claimed although its first worker
// should have claimed it a claim lead, twice a claim round trip and
// minTakeover ago: its first worker died or is stuck, and the backup would
// claim it only Backup (250ms) after it was due, after q's own due time
// for a job @every 100ms. Otherwise it notes when o becomes overdue.
func (f *fairOrder) noteOverdue(out *elders, q, o *queue.Item, now time.Time) {
	// The job slot group is the first limit of every run.
	if o.Job != q.Job || o.ConcurrencyKey != q.ConcurrencyKey || !o.NotBefore.Before(q.NotBefore) || o.Hold != nil {
		return
	}
	takeover := f.d.ClaimLead + f.rtt.backupWait() + minTakeover
	switch at := o.NotBefore.Add(takeover); {
	case !at.After(now):
		if out.overdue == nil || older(o.Entry, out.overdue.Entry) {
			out.overdue = o
		}
	case out.retry.IsZero() || at.Before(out.retry):
		out.retry = at
	}
}

// noRoom is the first of limits with no room at all, or nil.
func noRoom(limits []limit, roomOf func(limit) int) *slots.FullError {
	for _, l := range limits {
		if roomOf(l) == 0 {
			full := l.full
			return &full
		}
	}
	return nil
}

// takeOver claims o, a run whose first worker let it become overdue, now:
// unless this worker already has it in hand.
func (qr *queueRunner) takeOver(o *queue.Item) {
	qr.mu.Lock()
	active := qr.core.busy(o.RunID)
	_, parked := qr.parked[o.Key]
	if !active && !parked {
		heap.Push(&qr.pending, due{at: qr.d.Clock.Now(), key: o.Key, modRev: o.ModRev, ranked: true})
	}
	qr.mu.Unlock()
	if !active && !parked {
		qr.d.Log.Debug("taking over a run its first worker left unclaimed", "job", o.Job, "run_id", o.RunID)
		qr.signal()
	}
}
