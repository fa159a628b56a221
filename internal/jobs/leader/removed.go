package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
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

// noteRemoved asks keepRemovedHistory to look at those of jobs the config
// lacks.
func (l *leader) noteRemoved(jobs ...string) {
	l.mu.Lock()
	n := 0
	for _, job := range jobs {
		if _, ok := l.jobs[job]; !ok && l.jobs != nil {
			l.removedCheck[job] = true
			n++
		}
	}
	l.mu.Unlock()
	if n > 0 {
		signal(l.removedChanged)
	}
}

// keepRemovedHistory keeps removed jobs' history for the TTL while the
// term lasts: every job at the term's start and each removedScanGap, the
// jobs noted in between at once, and each expiry when it comes.
func (l *leader) keepRemovedHistory(ctx context.Context) error {
	timer := l.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	full, lastFull := true, l.d.Clock.Now()
	retry := roundRetry.Start()
	for {
		now := l.d.Clock.Now()
		next, err := l.removedRound(ctx, full)
		if err == nil {
			retry.Reset()
		}
		switch {
		case err == errNotLeader || ctx.Err() != nil:
			return err
		case err != nil:
			next, full = l.d.Clock.Now().Add(retry.Next()), true // what was noted is lost: look at all
			l.d.Log.Warn("keeping removed jobs' history failed; will try again", "err", err, "at", next)
		case full:
			full, lastFull = false, now
		}
		next = sooner(next, lastFull.Add(removedScanGap))
		timer.Reset(max(next.Sub(l.d.Clock.Now()), 0))
		select {
		case <-ctx.Done():
			return nil
		case <-l.removedChanged:
		case <-timer.Chan():
			full = full || !l.d.Clock.Now().Before(lastFull.Add(removedScanGap))
		}
	}
}

// removedRound marks the removed jobs that have records (all of them when
// full, else those noted), unmarks the jobs that came back and purges the
// history of those removed longer than the TTL ago. It returns the next
// expiry (zero: none).
func (l *leader) removedRound(ctx context.Context, full bool) (time.Time, error) {
	l.mu.Lock()
	synced := l.jobs != nil
	known := make(map[string]bool, len(l.jobs))
	for name := range l.jobs {
		known[name] = true
	}
	noted := l.removedCheck
	l.removedCheck = map[string]bool{}
	l.mu.Unlock()
	if !synced {
		// Every job looks removed before the config is taken (Run takes
		// it before it starts this part).
		return time.Time{}, errors.New("leader: removed jobs: the term has not taken the config yet")
	}
	now := l.d.Clock.Now()
	marks, err := l.removals(ctx)
	if err != nil {
		return time.Time{}, err
	}
	candidates, err := l.removedCandidates(ctx, full, noted, known, marks)
	if err != nil {
		return time.Time{}, err
	}
	for _, job := range candidates {
		if err := l.markRemoved(ctx, job, now); err != nil {
			return time.Time{}, err
		}
		l.d.Log.Info("removed job: history kept", "job", job, "until", now.Add(l.removedTTL()))
		marks[job] = &removal{at: now}
	}
	var next time.Time
	for job, m := range marks {
		expires := m.at.Add(l.removedTTL())
		switch {
		case known[job]:
			err = l.unmarkRemoved(ctx, job, m)
		case m.rev != 0 && !now.Before(expires): // rev 0: written in this round
			err = l.purgeRemoved(ctx, job, m)
		default:
			next = sooner(next, expires)
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	return next, nil
}

// removedCandidates are the jobs to mark removed: not in the config, not
// marked, with records. full lists every job with records; otherwise only
// the noted jobs are looked at.
func (l *leader) removedCandidates(ctx context.Context, full bool, noted, known map[string]bool, marks map[string]*removal) ([]string, error) {
	var withRecords []string
	if full {
		var err error
		if withRecords, err = l.jobsWithRecords(ctx); err != nil {
			return nil, err
		}
	} else {
		for job := range noted {
			if known[job] || marks[job] != nil {
				continue
			}
			resp, err := l.d.Client.Get(ctx, l.d.Keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithCountOnly())
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

// removedTTL is cluster.removed_history_ttl of the leader's config.
func (l *leader) removedTTL() time.Duration {
	if ttl := l.d.Config().Cluster.RemovedHistoryTTL.D(); ttl > 0 {
		return ttl
	}
	return config.DefaultRemovedHistoryTTL
}

// removals reads the removal markers. An unreadable time counts as now:
// the history is kept a whole TTL rather than deleted early.
func (l *leader) removals(ctx context.Context) (map[string]*removal, error) {
	resp, err := l.d.Client.Get(ctx, l.d.Keys.Removed(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("leader: read removed jobs: %w", err)
	}
	out := make(map[string]*removal, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		at, err := time.Parse(time.RFC3339Nano, string(kv.Value))
		if err != nil {
			l.d.Log.Warn("removed job: unreadable removal time; counting from now", "key", string(kv.Key), "err", err)
			at = l.d.Clock.Now()
		}
		out[l.d.Keys.RemovedName(string(kv.Key))] = &removal{at: at, rev: kv.ModRevision}
	}
	return out, nil
}

// jobsWithRecords lists the jobs that have records, one keys-only read of
// a single key per job: each read starts past the previous job's records.
func (l *leader) jobsWithRecords(ctx context.Context) ([]string, error) {
	from, end := l.d.Keys.Runs(), clientv3.GetPrefixRangeEnd(l.d.Keys.Runs())
	var out []string
	for {
		resp, err := l.d.Client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		if err != nil {
			return nil, fmt.Errorf("leader: list jobs with records: %w", err)
		}
		if len(resp.Kvs) == 0 {
			return out, nil
		}
		job := l.d.Keys.RecordJob(string(resp.Kvs[0].Key))
		out = append(out, job)
		from = clientv3.GetPrefixRangeEnd(l.d.Keys.JobRuns(job))
	}
}

// markRemoved writes job's marker unless one exists.
func (l *leader) markRemoved(ctx context.Context, job string, now time.Time) error {
	key := l.d.Keys.RemovedJob(job)
	_, err := l.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		clientv3.OpPut(key, now.UTC().Format(time.RFC3339Nano)))
	return err
}

// unmarkRemoved deletes the marker of a job that is back in the config:
// its history is its own again, pruned by its limits.
func (l *leader) unmarkRemoved(ctx context.Context, job string, m *removal) error {
	key := l.d.Keys.RemovedJob(job)
	ok, err := l.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", m.rev)}, clientv3.OpDelete(key))
	if ok {
		l.d.Log.Info("removed job is back: its history stays", "job", job)
	}
	return err
}

// purgeRemoved deletes a removed job's records, their unstarted markers
// and its marker, if the marker is as read and the job still removed.
func (l *leader) purgeRemoved(ctx context.Context, job string, m *removal) error {
	l.mu.Lock()
	_, back := l.jobs[job]
	l.mu.Unlock()
	if back {
		return nil // the next round unmarks it
	}
	key := l.d.Keys.RemovedJob(job)
	ok, err := l.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", m.rev)},
		clientv3.OpDelete(l.d.Keys.JobRuns(job), clientv3.WithPrefix()),
		clientv3.OpDelete(l.d.Keys.Unstarted(job), clientv3.WithPrefix()),
		clientv3.OpDelete(l.d.Keys.JobFanIns(job), clientv3.WithPrefix()),
		clientv3.OpDelete(key))
	if ok {
		l.d.Log.Info("removed job: history deleted", "job", job, "removed_at", m.at)
	}
	return err
}
