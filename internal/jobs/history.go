package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"

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

// pruneGap is the least time between two pruning rounds: one round reads
// and trims the history of every job that finished enough runs since, many
// jobs to a transaction, instead of one read and one delete per job.
const pruneGap = time.Second

// pruneReadBatch: history reads per read transaction.
const pruneReadBatch = 32

// prune keeps each job's history at history_limit records. A job is trimmed
// after every tenth of its limit in finished runs, so pruning costs a small
// share of a write per run.
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
		looked := l.e.clock.Now()
		if due := l.e.finished.take(threshold); len(due) > 0 {
			if err := l.pruneJobs(ctx, due); err != nil {
				if err == errNotLeader || ctx.Err() != nil {
					return err
				}
				l.e.log.Warn("pruning history failed", "jobs", len(due), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.e.finished.changed:
		}
		if !l.pause(ctx, looked.Add(pruneGap)) {
			return nil
		}
	}
}

// pruneJobs deletes, for each job, its oldest records beyond history_limit:
// the keys are read a batch of jobs at a time and deleted up to
// maxOpsPerTxn at a time, in fenced transactions.
func (l *leader) pruneJobs(ctx context.Context, jobs []string) error {
	var dels []clientv3.Op
	flush := func() error {
		if len(dels) == 0 {
			return nil
		}
		tr, err := l.e.opts.Client.Txn(ctx).If(l.fence).Then(dels...).Commit()
		dels = dels[:0]
		if err != nil {
			return fmt.Errorf("jobs: prune history: %w", err)
		}
		if !tr.Succeeded {
			return errNotLeader
		}
		return nil
	}
	for len(jobs) > 0 {
		batch := jobs[:min(len(jobs), pruneReadBatch)]
		jobs = jobs[len(batch):]
		reads := make([]clientv3.Op, len(batch))
		for i, job := range batch {
			reads[i] = clientv3.OpGet(l.e.keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
				clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
		}
		resp, err := l.e.opts.Client.Txn(ctx).Then(reads...).Commit()
		if err != nil {
			return fmt.Errorf("jobs: read history: %w", err)
		}
		for i, job := range batch {
			limit := 100
			l.mu.Lock()
			if j := l.jobs[job]; j != nil {
				limit = j.HistoryLimit
			}
			l.mu.Unlock()
			kvs := resp.Responses[i].GetResponseRange().Kvs
			for _, kv := range kvs[:max(0, len(kvs)-limit)] {
				dels = append(dels, clientv3.OpDelete(string(kv.Key)))
				if len(dels) == maxOpsPerTxn {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
	}
	return flush()
}
