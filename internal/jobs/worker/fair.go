package worker

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
)

// Fair order: among runs waiting for the same limit (a job's slots, a
// key's, a resource's, a rate window), the one due first is admitted
// first, cluster-wide. Every worker sees the whole queue, so before it
// claims a run it looks for an elder: a pending run that needs one of the
// same limits and is due before it. Only when there is none does it claim.
// Without this, whichever worker's watch fired first after a release won,
// and two jobs on identical schedules sharing a limit-1 resource got 26
// and 12 runs in the same minute.
//
// Ties between equal due times are broken by a hash of the run id and
// attempt, not by name: a name order would let the same job win every
// tie. The loser of a tie is then the elder at the next tick, so shares
// even out.

// fairBound bounds how long a run yields to its elders after it is due:
// an elder can be stuck behind a limit this run does not need (its own
// job's slots), and fairness must not cost liveness.
const fairBound = 2 * time.Second

// limits are the names of what a run of e waits for.
func limits(e *queue.Entry) []string {
	out := []string{"slot/" + keys.SlotGroup(e.Job, e.ConcurrencyKey)}
	if e.Spec.Rate != nil {
		out = append(out, "rate/"+e.Job)
	}
	for _, r := range e.Resources {
		out = append(out, "resource/"+r.Name)
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

// elder returns a pending run that needs a limit q needs and is due
// before q, while q is within fairBound of its due time; nil otherwise.
func (w *Worker) elder(q *queue.Item, now time.Time) *queue.Item {
	if now.After(q.NotBefore.Add(fairBound)) {
		return nil
	}
	mine := map[string]bool{}
	for _, l := range limits(q.Entry) {
		mine[l] = true
	}
	var found *queue.Item
	w.d.Queue.List(func(o *queue.Item) bool {
		if found != nil || o.State != queue.Pending || o.Key == q.Key || !older(o.Entry, q.Entry) {
			return false
		}
		for _, l := range limits(o.Entry) {
			if mine[l] {
				found = o
				return false
			}
		}
		return false
	})
	return found
}
