package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
)

// A removed job's history (docs/design-leader.md#a-removed-jobs-history), kept by a part of the term of
// its own, so that listing the jobs with records never delays pruning.
//
// Records of a job gone from the config stay readable for
// cluster.removed_history_ttl. When it was removed must be one time for
// the whole cluster and survive leaders, so the leader writes it down: a
// marker removed/<job> holding the time it first found the job's records
// without the job in its config. The marker goes when the job comes back;
// past the TTL the leader deletes the records, their unstarted markers and
// the marker in one transaction. Every write is fenced by the term.

// removedScanGap: besides at the term's start, the leader lists every job
// with records this often. Between two lists it looks only at the jobs
// that left the config or came back (syncJobs) and those that ended a run
// while out of it (the pruner's round): a list costs a read per job with records.
const removedScanGap = time.Hour

// removal is a removed job's marker as read.
type removal struct {
	at  time.Time
	rev int64 // ModRevision
}

// removedKeeper is the actor that keeps removed jobs' history for one
// term. Its checks are the jobs to look at (under mu); changed signals,
// coalescing, that there are some. It judges jobs by the leader's
// (withJobs).
type removedKeeper struct {
	*base
	// withJobs runs f with the term's jobs (nil: the config not taken
	// yet), under the leader's lock: what f notes or takes is in step
	// with the jobs syncJobs changes.
	withJobs func(f func(jobs map[string]*config.Job))
	mu       sync.Mutex
	checks   map[string]bool
	changed  chan struct{}
}

func newRemovedKeeper(b *base, withJobs func(func(map[string]*config.Job))) *removedKeeper {
	return &removedKeeper{base: b, withJobs: withJobs, checks: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// note asks the keeper to look at jobs that left the config or came back
// (syncJobs, under the leader's lock).
func (k *removedKeeper) note(jobs ...string) {
	k.mu.Lock()
	for _, job := range jobs {
		k.checks[job] = true
	}
	n := len(k.checks)
	k.mu.Unlock()
	if n > 0 {
		signal(k.changed)
	}
}

// take returns the jobs to look at, and looks at none of them again
// unless noted again.
func (k *removedKeeper) take() map[string]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	noted := k.checks
	k.checks = map[string]bool{}
	return noted
}

// noteRemoved asks the keeper to look at those of jobs the config lacks.
func (k *removedKeeper) noteRemoved(jobs ...string) {
	var out []string
	k.withJobs(func(known map[string]*config.Job) {
		for _, job := range jobs {
			if _, ok := known[job]; !ok && known != nil {
				out = append(out, job)
			}
		}
		if len(out) > 0 {
			k.note(out...)
		}
	})
}

// Run keeps removed jobs' history for the TTL while the
// term lasts: every job at the term's start and each removedScanGap, the
// jobs noted in between at once, and each expiry when it comes.
func (k *removedKeeper) Run(ctx context.Context) error {
	timer := k.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	full, lastFull := true, k.d.Clock.Now()
	retry := roundRetry.Start()
	for {
		now := k.d.Clock.Now()
		next, err := k.round(ctx, full)
		if err == nil {
			retry.Reset()
		}
		switch {
		case err == errNotLeader || ctx.Err() != nil:
			return err
		case err != nil:
			next, full = k.d.Clock.Now().Add(retry.Next()), true // what was noted is lost: look at all
			k.d.Log.Warn("keeping removed jobs' history failed; will try again", "err", err, "at", next)
		case full:
			full, lastFull = false, now
		}
		next = sooner(next, lastFull.Add(removedScanGap))
		timer.Reset(max(next.Sub(k.d.Clock.Now()), 0))
		select {
		case <-ctx.Done():
			return nil
		case <-k.changed:
		case <-timer.Chan():
			full = full || !k.d.Clock.Now().Before(lastFull.Add(removedScanGap))
		}
	}
}

// round marks the removed jobs that have records (all of them when
// full, else those noted), unmarks the jobs that came back and purges the
// history of those removed longer than the TTL ago. It returns the next
// expiry (zero: none).
func (k *removedKeeper) round(ctx context.Context, full bool) (time.Time, error) {
	var synced bool
	var known, noted map[string]bool
	k.withJobs(func(jobs map[string]*config.Job) {
		synced = jobs != nil
		known = make(map[string]bool, len(jobs))
		for name := range jobs {
			known[name] = true
		}
		noted = k.take()
	})
	if !synced {
		// Every job looks removed before the config is taken (Run takes
		// it before it starts this part).
		return time.Time{}, errors.New("leader: removed jobs: the term has not taken the config yet")
	}
	now := k.d.Clock.Now()
	marks, err := k.removals(ctx)
	if err != nil {
		return time.Time{}, err
	}
	candidates, err := k.candidates(ctx, full, noted, known, marks)
	if err != nil {
		return time.Time{}, err
	}
	for _, job := range candidates {
		if err := k.mark(ctx, job, now); err != nil {
			return time.Time{}, err
		}
		k.d.Log.Info("removed job: history kept", "job", job, "until", now.Add(k.ttl()))
		marks[job] = &removal{at: now}
	}
	var next time.Time
	for job, m := range marks {
		expires := m.at.Add(k.ttl())
		switch {
		case known[job]:
			err = k.unmark(ctx, job, m)
		case m.rev != 0 && !now.Before(expires): // rev 0: written in this round
			err = k.purge(ctx, job, m)
		default:
			next = sooner(next, expires)
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	return next, nil
}

// candidates are the jobs to mark removed: not in the config, not
// marked, with records (of their own or in chunk records). full lists
// every job with records; otherwise only the noted jobs are looked at.
func (k *removedKeeper) candidates(ctx context.Context, full bool, noted, known map[string]bool, marks map[string]*removal) ([]string, error) {
	var withRecords []string
	if full {
		var err error
		if withRecords, err = k.jobsWithRecords(ctx); err != nil {
			return nil, err
		}
		withRecords = append(withRecords, k.d.Chunks.Jobs()...) // twice is harmless
	} else {
		for job := range noted {
			if known[job] || marks[job] != nil {
				continue
			}
			if len(k.d.Chunks.Job(job)) > 0 {
				withRecords = append(withRecords, job)
				continue
			}
			resp, err := k.d.Client.Get(ctx, k.d.Keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return nil, fmt.Errorf("leader: read the records of %s: %w", job, err)
			}
			if resp.Count > 0 {
				withRecords = append(withRecords, job)
			}
		}
	}
	var out []string
	for _, job := range withRecords {
		if !known[job] && marks[job] == nil {
			out = append(out, job)
		}
	}
	return out, nil
}

// sooner is the earlier of a and b; a zero time is none.
func sooner(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// ttl is cluster.removed_history_ttl of the leader's config.
func (k *removedKeeper) ttl() time.Duration {
	if ttl := k.d.Config().Cluster.RemovedHistoryTTL.D(); ttl > 0 {
		return ttl
	}
	return config.DefaultRemovedHistoryTTL
}

// removals reads the removal markers. An unreadable time counts as now:
// the history is kept a whole TTL rather than deleted early.
func (k *removedKeeper) removals(ctx context.Context) (map[string]*removal, error) {
	resp, err := k.d.Client.Get(ctx, k.d.Keys.Removed(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("leader: read removed jobs: %w", err)
	}
	out := make(map[string]*removal, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		at, err := time.Parse(time.RFC3339Nano, string(kv.Value))
		if err != nil {
			k.d.Log.Warn("removed job: unreadable removal time; counting from now", "key", string(kv.Key), "err", err)
			at = k.d.Clock.Now()
		}
		out[k.d.Keys.RemovedName(string(kv.Key))] = &removal{at: at, rev: kv.ModRevision}
	}
	return out, nil
}

// jobsWithRecords lists the jobs that have records, one keys-only read of
// a single key per job: each read starts past the previous job's records.
func (k *removedKeeper) jobsWithRecords(ctx context.Context) ([]string, error) {
	from, end := k.d.Keys.Runs(), clientv3.GetPrefixRangeEnd(k.d.Keys.Runs())
	var out []string
	for {
		resp, err := k.d.Client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return nil, fmt.Errorf("leader: list jobs with records: %w", err)
		}
		if len(resp.Kvs) == 0 {
			return out, nil
		}
		job := k.d.Keys.RecordJob(string(resp.Kvs[0].Key))
		out = append(out, job)
		from = clientv3.GetPrefixRangeEnd(k.d.Keys.JobRuns(job))
	}
}

// mark writes job's marker unless one exists.
func (k *removedKeeper) mark(ctx context.Context, job string, now time.Time) error {
	key := k.d.Keys.RemovedJob(job)
	_, err := k.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		clientv3.OpPut(key, now.UTC().Format(time.RFC3339Nano)))
	return err
}

// unmark deletes the marker of a job that is back in the config:
// its history is its own again, pruned by its limits.
func (k *removedKeeper) unmark(ctx context.Context, job string, m *removal) error {
	key := k.d.Keys.RemovedJob(job)
	ok, err := k.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", m.rev)}, clientv3.OpDelete(key))
	if ok {
		k.d.Log.Info("removed job is back: its history stays", "job", job)
	}
	return err
}

// purge deletes a removed job's records, their unstarted markers, its
// ticks in chunk records, its last success and its marker, if the marker
// is as read and the job still removed; the ticks of the records stay in
// its pruned stretches (purgeCover): should it come back, a backfill does
// not run them again. Its chunk ticks go maxPurgeTicks a transaction, the
// records with the last.
func (k *removedKeeper) purge(ctx context.Context, job string, m *removal) error {
	var back bool
	k.withJobs(func(jobs map[string]*config.Job) { _, back = jobs[job] })
	if back {
		return nil // the next round unmarks it
	}
	ticks := k.d.Chunks.Job(job)
	for {
		batch := ticks[:min(len(ticks), maxPurgeTicks)]
		ticks = ticks[len(batch):]
		done, err := k.purgeSome(ctx, job, m, batch, len(ticks) == 0)
		if err != nil || !done || len(ticks) == 0 {
			return err
		}
	}
}

// maxPurgeTicks bounds the chunk records a purge's transaction rewrites,
// beside its other compares and operations, under etcd's --max-txn-ops.
const maxPurgeTicks = maxOpsPerTxn - 10

// errChunkMoved: a chunk record naming a removed job's tick changed since
// the index read it; the purge is tried again.
var errChunkMoved = errors.New("leader: a chunk record changed meanwhile")

// purgeSome takes ticks, some of job's ticks in chunk records, out of
// them, and when last deletes the rest of its history too, in one fenced
// transaction that keeps every tick covered. done is false when the
// marker changed or the job's records did.
func (k *removedKeeper) purgeSome(ctx context.Context, job string, m *removal, ticks []shed.Tick, last bool) (done bool, err error) {
	edits, stale := editsOf(k.d.Chunks, ticks)
	if stale > 0 {
		return false, errChunkMoved
	}
	at := make([]time.Time, len(ticks))
	for i, t := range ticks {
		at[i] = t.Record.ScheduledAt
	}
	cover, put, err := k.purgeCover(ctx, job, at)
	if err != nil {
		return false, err
	}
	key := k.d.Keys.RemovedJob(job)
	cmps := append(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", m.rev)}, cover...), cmpsOf(edits)...)
	ops := append(put, opsOf(edits)...)
	if last {
		ops = append(ops,
			clientv3.OpDelete(k.d.Keys.JobRuns(job), clientv3.WithPrefix()),
			clientv3.OpDelete(k.d.Keys.Unstarted(job), clientv3.WithPrefix()),
			clientv3.OpDelete(k.d.Keys.JobFanIns(job), clientv3.WithPrefix()),
			clientv3.OpDelete(k.d.Keys.LastSuccess(job)),
			clientv3.OpDelete(k.d.Keys.SucceededInJobs(job)),
			clientv3.OpDelete(key))
	}
	ok, err := k.fenced(ctx, cmps, ops...)
	if ok && last {
		k.d.Log.Info("removed job: history deleted", "job", job, "removed_at", m.at)
	}
	return ok, err
}
