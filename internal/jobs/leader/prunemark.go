package leader

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The prune's mark for backfill (docs/design-leader.md#backfill-never-reruns-a-tick):
// a backfill queues a tick only when it finds it in none of the places an
// authorized tick lives, its record one of them. A tick whose record was
// pruned is in none, and ran: before each round's deletes, the pruner
// lowers pruned/<job> (keys.PrunedFrom) to the earliest scheduled tick it
// is about to delete, so a backfill takes every tick from there to the
// cursor without a record as one that may have run. Written before the
// deletes, a mark is at worst lower than the records deleted (a delete
// that then failed): a backfill skips more, never runs a tick twice.

// marks are the values this term knows pruned/<job> to be at or below:
// a job's deletes from then on need no write (a steady job prunes ticks
// later than its last round's).
type marks struct {
	mu    sync.Mutex
	known map[string]time.Time
}

// needs says whether deleting job's records from `from` on needs the mark
// lowered.
func (m *marks) needs(job string, from time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.known[job]
	return !ok || from.Before(k)
}

func (m *marks) note(job string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known == nil {
		m.known = map[string]time.Time{}
	}
	if k, ok := m.known[job]; !ok || at.Before(k) {
		m.known[job] = at
	}
}

// earliestTicks is, per job of hs, the earliest scheduled tick among its
// records to delete (none: a job whose deletes are manual, keyed or
// chained runs only).
func (p *pruner) earliestTicks(hs []historyOf) map[string]time.Time {
	out := map[string]time.Time{}
	for _, h := range hs {
		for key := range h.old {
			at, ok := runs.ScheduledAtOf(p.d.Keys.RecordRun(key))
			if !ok {
				continue
			}
			job := p.d.Keys.RecordJob(key)
			if e, seen := out[job]; !seen || at.Before(e) {
				out[job] = at
			}
		}
	}
	return out
}

// lowerMarks lowers pruned/<job> to from for each job of earliest whose
// mark this term does not know to be there already: one fenced
// transaction, a put-if-lower nested for each job (markOp).
func (p *pruner) lowerMarks(ctx context.Context, earliest map[string]time.Time) error {
	var ops []clientv3.Op
	var jobs []string
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		ok, err := p.fenced(ctx, nil, ops...)
		if err != nil {
			return err
		}
		if !ok { // the fence is its only compare
			return errNotLeader
		}
		for _, job := range jobs {
			p.marks.note(job, earliest[job])
		}
		ops, jobs = ops[:0], jobs[:0]
		return nil
	}
	for job, from := range earliest {
		if !p.marks.needs(job, from) {
			continue
		}
		ops, jobs = append(ops, markOp(p.d.Keys, job, from)), append(jobs, job)
		if len(ops) == maxOpsPerTxn {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// markValue is a mark of at, as stored: fixed-width, so values compare
// in time order.
func markValue(at time.Time) string { return at.UTC().Format(keys.InstantFormat) }

// markOp lowers job's mark to from unless it is there already:
// If(no mark) Then(put) Else(If(mark later than from) Then(put)).
func markOp(k keys.Layout, job string, from time.Time) clientv3.Op {
	key, v := k.PrunedFrom(job), markValue(from)
	put := clientv3.OpPut(key, v)
	later := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(key), ">", v)}, []clientv3.Op{put}, nil)
	return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		[]clientv3.Op{put}, []clientv3.Op{later})
}
