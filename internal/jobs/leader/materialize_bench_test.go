package leader

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
)

// BenchmarkPlanTicks is the in-memory part of materializing: planning one
// job's ticks for a pass (steady state: one tick after a known cursor).
func BenchmarkPlanTicks(b *testing.B) {
	cfg := jobstest.Config(jobstest.Job("plan", "@every 1s"))
	j := &cfg.Jobs[0]
	sched, err := j.ParsedSchedule()
	if err != nil {
		b.Fatal(err)
	}
	cursor := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	for b.Loop() {
		p := planTicks(j, sched, cursor, cursor.Add(-time.Second), 2*time.Second)
		if len(p.Ticks) != 1 {
			b.Fatalf("planned %d ticks", len(p.Ticks))
		}
		cursor = p.Cursor
	}
}

// BenchmarkMaterialize writes the ticks of 40 "@every 1s" jobs per
// iteration against an embedded etcd member, one job after the other: each
// tick in its own fenced transaction, or the jobs' ticks batched. It
// reports ticks per second and etcd revisions per tick.
func BenchmarkMaterialize(b *testing.B) {
	for _, batched := range []bool{false, true} {
		name := "txn-per-tick"
		if batched {
			name = "batched"
		}
		b.Run(name, func(b *testing.B) { benchMaterialize(b, batched) })
	}
}

func benchMaterialize(b *testing.B, batched bool) {
	const jobCount = 40 // one batch of one-tick jobs
	ctx := b.Context()
	var jobs []config.Job
	for i := range jobCount {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("mat-%02d", i), "@every 1s"))
	}
	cfg := jobstest.Config(jobs...)
	l, cli, clock := leaderOn(b, "/bench/", cfg, time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC))
	startTerm(b, l, 0)
	due := make([]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		due[i] = &cfg.Jobs[i]
	}
	rev0 := revision(b, cli)
	ticks := 0
	start := time.Now()
	for b.Loop() {
		clock.Advance(time.Second)
		now := clock.Now()
		single := due
		if batched {
			var batches [][]batchItem
			batches, single = l.splitBatches(due, now)
			for _, batch := range batches {
				if ok, err := l.ticks.writeBatch(ctx, batch); err != nil || !ok {
					b.Fatal(ok, err)
				}
				ticks += len(batch)
			}
		}
		for _, j := range single {
			if _, err := l.process(ctx, j); err != nil {
				b.Fatal(err)
			}
			ticks++
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(ticks)/elapsed.Seconds(), "ticks/s")
	b.ReportMetric(float64(revision(b, cli)-rev0)/float64(ticks), "revisions/tick")
}

func revision(b testing.TB, cli *clientv3.Client) int64 {
	resp, err := cli.Get(b.Context(), "/bench/none")
	if err != nil {
		b.Fatal(err)
	}
	return resp.Header.Revision
}
