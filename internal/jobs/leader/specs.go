package leader

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// Job specs (queue.Spec, at specs/<job>/<ref>) are written by whoever
// writes an entry that refers to one: a chained or triggered entry's
// writer writes its spec in the same transaction, always; the leader
// writes a spec with the first tick of it in its term (specBook.written) and
// not again. The leader deletes the specs that no queue entry (pending,
// running, or a pending retry) has referred to for SpecGrace, in fenced
// transactions, so that etcd holds about one spec per job that ran
// lately, not one per version ever scheduled.
//
// Why a spec in use is never deleted, whoever writes entries meanwhile:
//
//   - The decision is made on one read, at one revision, of the job's specs
//     and its queue entries (not on the views, which may lag), and each
//     delete compares the spec's ModRevision with that read's.
//   - An entry created after the read by anyone but the leader's ticks
//     wrote its spec in its own transaction: the spec's ModRevision moved,
//     and the delete fails.
//   - A retry, a hold or a claim rewrites an entry that refers to the same
//     spec; that entry existed at the read, or was created after it (and
//     then by a write of the spec).
//   - The leader's ticks leave the write out for a spec in specBook.written.
//     Before its read the collection takes its candidates out of
//     specBook.written (later ticks write them again) behind its gate, which
//     every pass holds from building its writes to their answers: the
//     ticks built without the write are answered, and visible to the
//     read, before it.
//
// A spec deleted in error would cost liveness, not safety: a worker never
// runs an entry whose spec it cannot read; it waits, and the starting
// deadline records the run missed.

const (
	// specGrace: a spec nothing refers to stays this long, so that a job
	// whose runs come less often than its lookahead does not write and
	// delete its spec for every run.
	specGrace = time.Minute
	// specCollectGap is the time between two looks for unused specs.
	specCollectGap = 10 * time.Second
)

// specCollector is the actor that deletes unused specs for one term. The
// candidates (unused, since when) are its goroutine's (Run); what it knows
// with the passes is in the book.
type specCollector struct {
	*base
	book *specBook
}

// Run deletes unused specs until ctx ends.
func (c *specCollector) Run(ctx context.Context) error {
	unused := map[string]time.Time{}
	for {
		looked := c.d.Clock.Now()
		if err := c.once(ctx, unused); err != nil {
			if errors.Is(err, errNotLeader) || ctx.Err() != nil {
				return err
			}
			c.d.Log.Warn("collecting unused job specs failed; will try again", "err", err)
		}
		if !c.pause(ctx, looked.Add(specCollectGap)) {
			return nil
		}
	}
}

// once looks at the specs once: those the views show unused
// become candidates (unused holds since when), and candidates unused for
// SpecGrace are deleted if a read of their job's specs and entries at one
// revision confirms that nothing refers to them.
func (c *specCollector) once(ctx context.Context, unused map[string]time.Time) error {
	byJob := c.candidates(c.d.Clock.Now(), unused)
	if len(byJob) == 0 {
		return nil
	}

	// Ticks built from here on write these specs again; the ones built
	// before are answered once the gate is ours.
	c.book.release(byJob)

	dels, err := c.unreferenced(ctx, byJob, unused)
	if err != nil {
		return err
	}
	for len(dels) > 0 {
		batch := dels[:min(len(dels), maxOpsPerTxn-1)]
		dels = dels[len(batch):]
		if err := c.deleteUnchanged(ctx, batch); err != nil {
			return err
		}
		for _, k := range batch {
			delete(unused, k.key)
		}
		c.d.Log.Debug("deleted unused job specs", "count", len(batch))
	}
	return nil
}

// candidates updates unused from the views (a spec no entry and no
// recent assignment refers to is unused since now, one in use or gone
// leaves it) and returns, by job, the specs unused for SpecGrace.
func (c *specCollector) candidates(now time.Time, unused map[string]time.Time) (byJob map[string][]string) {
	used := map[string]bool{}
	c.d.Queue.List(func(q *queue.Item) bool {
		if k := q.SpecKey(c.d.Keys); k != "" {
			used[k] = true
		}
		return false
	})
	c.book.assignedUsed(used, now, c.d.SpecGrace)
	exists := map[string]bool{}
	byJob = map[string][]string{}
	for _, key := range c.d.Specs.Keys() {
		exists[key] = true
		if used[key] {
			delete(unused, key)
			continue
		}
		first, seen := unused[key]
		if !seen {
			unused[key] = now
			continue
		}
		if now.Sub(first) < c.d.SpecGrace {
			continue
		}
		if job, _, ok := c.d.Keys.ParseSpec(key); ok {
			byJob[job] = append(byJob[job], key)
		}
	}
	for key := range unused {
		if !exists[key] {
			delete(unused, key)
		}
	}
	return byJob
}

// unreferenced reads each candidate's job's specs and entries at one
// revision and returns the candidates nothing refers to, as read; the
// others leave unused (gone, or in use after all).
func (c *specCollector) unreferenced(ctx context.Context, byJob map[string][]string, unused map[string]time.Time) ([]seenKey, error) {
	jobs := make([]string, 0, len(byJob))
	for job := range byJob {
		jobs = append(jobs, job)
	}
	var dels []seenKey
	specsAndEntries := func(job string) [2]clientv3.Op {
		return [2]clientv3.Op{
			clientv3.OpGet(c.d.Keys.JobSpecs(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(c.d.Keys.JobQueue(job), clientv3.WithPrefix()),
		}
	}
	err := c.readJobs(ctx, jobs, "specs and entries", specsAndEntries, func(job string, specs, entries []*mvccpb.KeyValue) error {
		refs := map[string]bool{}
		for _, kv := range entries {
			e, err := queue.Decode(kv.Value)
			if err != nil {
				// An entry that does not decode might refer to any
				// spec of its job: keep them all.
				c.d.Log.Warn("unreadable queue entry: keeping its job's specs", "key", string(kv.Key), "err", err)
				refs = nil
				break
			}
			if k := e.SpecKey(c.d.Keys); k != "" {
				refs[k] = true
			}
		}
		stored := map[string]int64{}
		for _, kv := range specs {
			stored[string(kv.Key)] = kv.ModRevision
		}
		for _, key := range byJob[job] {
			rev, ok := stored[key]
			switch {
			case !ok:
				delete(unused, key) // gone already
			case refs == nil || refs[key]:
				delete(unused, key) // in use after all: its grace starts over
			default:
				dels = append(dels, seenKey{key: key, rev: rev})
			}
		}
		return nil
	})
	return dels, err
}
