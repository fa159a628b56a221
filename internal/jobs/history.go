package jobs

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// maxOpsPerTxn stays under etcd's default --max-txn-ops of 128.
const maxOpsPerTxn = 100

// finishedJobs counts, per job, runs finished since its history was last
// pruned; every replica counts (from its queue view), the leader prunes.
type finishedJobs struct {
	mu      sync.Mutex
	counts  map[string]int
	changed chan struct{}
}

func newFinishedJobs() *finishedJobs {
	return &finishedJobs{counts: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (e *Engine) noteFinished(job string) {
	f := e.finished
	f.mu.Lock()
	f.counts[job]++
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// take returns the jobs that finished at least threshold(job) runs.
func (f *finishedJobs) take(threshold func(job string) int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var due []string
	for job, n := range f.counts {
		if n >= threshold(job) {
			due = append(due, job)
			delete(f.counts, job)
		}
	}
	return due
}

// prune keeps each job's history at history_limit records. It runs every
// tenth of the limit, so pruning costs a small share of a write per run.
func (l *leader) prune(ctx context.Context) error {
	threshold := func(job string) int {
		l.mu.Lock()
		j := l.jobs[job]
		l.mu.Unlock()
		if j == nil {
			return 1
		}
		return max(1, j.HistoryLimit/10)
	}
	for {
		for _, job := range l.e.finished.take(threshold) {
			if err := l.pruneJob(ctx, job); err != nil {
				if err == errNotLeader || ctx.Err() != nil {
					return err
				}
				l.e.log.Warn("pruning history failed", "job", job, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.e.finished.changed:
		}
	}
}

func (l *leader) pruneJob(ctx context.Context, job string) error {
	limit := 100
	l.mu.Lock()
	if j := l.jobs[job]; j != nil {
		limit = j.HistoryLimit
	}
	l.mu.Unlock()
	resp, err := l.e.opts.Client.Get(ctx, l.e.keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		return fmt.Errorf("jobs: read history of %s: %w", job, err)
	}
	excess := resp.Kvs[:max(0, len(resp.Kvs)-limit)]
	for len(excess) > 0 {
		n := min(len(excess), maxOpsPerTxn)
		ops := make([]clientv3.Op, n)
		for i, kv := range excess[:n] {
			ops[i] = clientv3.OpDelete(string(kv.Key))
		}
		tr, err := l.e.opts.Client.Txn(ctx).If(l.fence).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("jobs: prune history of %s: %w", job, err)
		}
		if !tr.Succeeded {
			return errNotLeader
		}
		excess = excess[n:]
	}
	return nil
}
