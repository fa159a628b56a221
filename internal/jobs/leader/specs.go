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
// writes a spec with the first tick of it in its term (specsWritten) and
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
//   - The leader's ticks leave the write out for a spec in specsWritten.
//     Before its read the collection takes its candidates out of
//     specsWritten (later ticks write them again) behind specGate, which
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

// specWritten reports whether this term wrote the spec at key.
func (l *leader) specWritten(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.specsWritten[key]
}

// wroteSpecs notes the specs among ops, a transaction that applied.
func (l *leader) wroteSpecs(ops []clientv3.Op) {
	keys := queue.SpecKeys(l.d.Keys, ops)
	if len(keys) == 0 {
		return
	}
	l.mu.Lock()
	for _, k := range keys {
		l.specsWritten[k] = true
	}
	l.mu.Unlock()
}

// collectSpecs deletes unused specs until ctx ends.
func (l *leader) collectSpecs(ctx context.Context) error {
	unused := map[string]time.Time{}
	for {
		looked := l.d.Clock.Now()
		if err := l.collectSpecsOnce(ctx, unused); err != nil {
			if errors.Is(err, errNotLeader) || ctx.Err() != nil {
				return err
			}
			l.d.Log.Warn("collecting unused job specs failed; will try again", "err", err)
		}
		if !l.pause(ctx, looked.Add(specCollectGap)) {
			return nil
		}
	}
}

// collectSpecsOnce looks at the specs once: those the views show unused
// become candidates (unused holds since when), and candidates unused for
// SpecGrace are deleted if a read of their job's specs and entries at one
// revision confirms that nothing refers to them.
func (l *leader) collectSpecsOnce(ctx context.Context, unused map[string]time.Time) error {
	byJob := l.specCandidates(l.d.Clock.Now(), unused)
	if len(byJob) == 0 {
		return nil
	}

	// Ticks built from here on write these specs again; the ones built
	// before are answered once the gate is ours.
	l.specGate.Lock()
	l.mu.Lock()
	l.keepAssignedSpecsLocked(byJob)
	for _, keys := range byJob {
		for _, k := range keys {
			delete(l.specsWritten, k)
		}
	}
	l.mu.Unlock()
	l.specGate.Unlock()

	dels, err := l.unreferencedSpecs(ctx, byJob, unused)
	if err != nil {
		return err
	}
	for len(dels) > 0 {
		batch := dels[:min(len(dels), maxOpsPerTxn-1)]
		dels = dels[len(batch):]
		if err := l.deleteUnchanged(ctx, batch); err != nil {
			return err
		}
		for _, k := range batch {
			delete(unused, k.key)
		}
		l.d.Log.Debug("deleted unused job specs", "count", len(batch))
	}
	return nil
}

// specCandidates updates unused from the views (a spec no entry and no
// recent assignment refers to is unused since now, one in use or gone
// leaves it) and returns, by job, the specs unused for SpecGrace.
func (l *leader) specCandidates(now time.Time, unused map[string]time.Time) (byJob map[string][]string) {
	used := map[string]bool{}
	l.d.Queue.List(func(q *queue.Item) bool {
		if k := q.SpecKey(l.d.Keys); k != "" {
			used[k] = true
		}
		return false
	})
	l.assignedSpecsUsed(used, now)
	exists := map[string]bool{}
	byJob = map[string][]string{}
	for _, key := range l.d.Specs.Keys() {
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
		if now.Sub(first) < l.d.SpecGrace {
			continue
		}
		if job, _, ok := l.d.Keys.ParseSpec(key); ok {
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

// unreferencedSpecs reads each candidate's job's specs and entries at one
// revision and returns the candidates nothing refers to, as read; the
// others leave unused (gone, or in use after all).
func (l *leader) unreferencedSpecs(ctx context.Context, byJob map[string][]string, unused map[string]time.Time) ([]seenKey, error) {
	jobs := make([]string, 0, len(byJob))
	for job := range byJob {
		jobs = append(jobs, job)
	}
	var dels []seenKey
	specsAndEntries := func(job string) [2]clientv3.Op {
		return [2]clientv3.Op{
			clientv3.OpGet(l.d.Keys.JobSpecs(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
			clientv3.OpGet(l.d.Keys.JobQueue(job), clientv3.WithPrefix()),
		}
	}
	err := l.readJobs(ctx, jobs, "specs and entries", specsAndEntries, func(job string, specs, entries []*mvccpb.KeyValue) error {
		refs := map[string]bool{}
		for _, kv := range entries {
			e, err := queue.Decode(kv.Value)
			if err != nil {
				// An entry that does not decode might refer to any
				// spec of its job: keep them all.
				l.d.Log.Warn("unreadable queue entry: keeping its job's specs", "key", string(kv.Key), "err", err)
				refs = nil
				break
			}
			if k := e.SpecKey(l.d.Keys); k != "" {
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
