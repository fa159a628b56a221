package jobs

import (
	"context"
	"log/slog"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// runReader is the read side of runs, as the API shows them: a job's
// records a page at a time (runspage.go), one run wherever it is, queued,
// running or recorded (findrun.go), the runs pending in this replica's
// queue view, the removed jobs whose records are kept (removed.go), and
// the refusal of a job name the config lacks (unknown.go). It owns no
// state of its own: it reads etcd and the views the engine mirrors
// (queue entries, held slots, chunk records by job), and writes nothing.
type runReader struct {
	kv     clientv3.KV
	keys   keys.Layout
	config func() *config.Config
	log    *slog.Logger
	queue  *queue.View
	slots  *slots.Semaphore
	pages  runPages
}

func newRunReader(opts *Options, layout keys.Layout, q *queue.View, ticks *shed.Index) *runReader {
	return &runReader{
		kv: opts.Client, keys: layout, config: opts.Config, log: opts.Logger,
		queue: q, slots: opts.Slots, pages: runPages{kv: opts.Client, keys: layout, shed: ticks},
	}
}

// Pending lists queued and running runs, oldest first.
func (rr *runReader) Pending() []RunStatus {
	var out []RunStatus
	for _, q := range rr.queue.List(nil) {
		out = append(out, RunStatus{State: string(q.State), Record: q.InFlight(q.Token())})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ScheduledAt.Before(out[j].ScheduledAt) })
	return out
}

// lastRun is job's newest record, nil when it has none.
func (rr *runReader) lastRun(ctx context.Context, job string) (*runs.Record, error) {
	recs, _, err := rr.pages.readRuns(ctx, job, Page{Limit: 1})
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &recs[0], nil
}
