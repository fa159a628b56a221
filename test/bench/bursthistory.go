package main

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A step's jobs start with full histories (-burst-history, on by
// default). A job keeps history_limit records and, once it has that
// many, the leader deletes one for each run that ends (leader/prune.go):
// in a steady state every run also pays a delete. A step's jobs are new,
// and in a window of tens of seconds they never reach their limit, so the
// steps measured before 12-01 left that delete out (1,000 jobs after a
// warm-up of 130 s, histories full: 9.60 index operations a run against
// 7.9-8.1, etcd 0.54 ms a run against 0.34-0.40). Seeding each job's
// history_limit records of succeeded runs, due before the step, makes the
// window pay what a cluster that has run for two minutes pays.

// seedWriters: transactions of seeded records in flight.
const seedWriters = 8

// seedHistory writes config.DefaultHistoryLimit succeeded records for
// each of the step's n jobs, due on the whole seconds before before (the
// ticks of the jobs' schedule, as a record's run id always is: seeded at
// before's fraction of a second, each record's tick was a gap of its own
// in the pruned stretches, and every prune round wrote them, 0.5 index
// operations a run), as the engine writes a run's record
// (queue.RecordOps), and returns how many.
func (e *env) seedHistory(ctx context.Context, step string, n int, before time.Time) (int, error) {
	before = before.Truncate(time.Second)
	err := seedJobs(ctx, e.cli, n, func(i int) string { return burstJobName(step, i) }, func(i int) []clientv3.Op {
		job := burstJobName(step, i)
		ops := make([]clientv3.Op, 0, config.DefaultHistoryLimit)
		for k := range config.DefaultHistoryLimit {
			rec := seededRecord(job, before.Add(-time.Duration(config.DefaultHistoryLimit-k)*time.Second))
			ops = append(ops, queue.RecordOps(layout, &rec)...)
		}
		return ops
	})
	if err != nil {
		return 0, err
	}
	return n * config.DefaultHistoryLimit, nil
}

// seedJobs writes each of n jobs' history, ops(i), in one transaction a
// job, seedWriters at once; name(i) is the job's name in an error. The
// burst's steps and the lean floor seed through it.
func seedJobs(ctx context.Context, cli *clientv3.Client, n int, name func(int) string, ops func(int) []clientv3.Op) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWriters)
	for i := range n {
		g.Go(func() error {
			if _, err := cli.Txn(gctx).Then(ops(i)...).Commit(); err != nil {
				return fmt.Errorf("bench: seeding the history of %s: %w", name(i), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// seededRecord is the record of a run of job due at at that succeeded, as
// a burst run's: an HTTP call of a few milliseconds.
func seededRecord(job string, at time.Time) runs.Record {
	return runs.Record{
		RunID: runs.ID(job, at), Job: job, Attempt: 1, Trigger: runs.Schedule,
		ScheduledAt: at.UTC(), StartedAt: at.UTC(), EndedAt: at.Add(5 * time.Millisecond).UTC(),
		Holder: "r1.seed", FencingToken: 1, Outcome: runs.Succeeded, HTTPStatus: 200,
	}
}

// recordsHeld is how many run records etcd holds (count only).
func (e *env) recordsHeld(ctx context.Context) (int64, error) {
	resp, err := e.cli.Get(ctx, layout.Runs(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("bench: counting the records held: %w", err)
	}
	return resp.Count, nil
}
