package jobs

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/runs"
)

// FindRun returns one run, queued, running or finished.
func (rr *runReader) FindRun(ctx context.Context, runID string) (RunStatus, error) {
	job := runs.JobOf(runID)
	resp, err := rr.kv.Txn(ctx).Then(
		clientv3.OpGet(rr.keys.Entry(job, runID)),
		clientv3.OpGet(rr.keys.Record(job, runID)),
	).Commit()
	if err != nil {
		return RunStatus{}, fmt.Errorf("jobs: read run %s: %w", runID, err)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		q, err := queue.Decode(kvs[0].Value)
		if err != nil {
			return RunStatus{}, err
		}
		return RunStatus{State: string(q.State), Record: q.InFlight(kvs[0].ModRevision)}, nil
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		r, err := runs.DecodeRecord(kvs[0].Value)
		if err != nil {
			return RunStatus{}, fmt.Errorf("jobs: decode run %s: %w", runID, err)
		}
		return RunStatus{State: "finished", Record: r}, nil
	}
	if tick, found, err := rr.findTick(ctx, job, runID); err != nil || found {
		return tick, err
	}
	if st, found, err := rr.findShed(ctx, job, runID); err != nil || found {
		return st, err
	}
	// An assigned run (the lean protocol, docs/protocol.md) has no queue
	// entry: while it runs, its slot says so.
	held, err := rr.slots.HeldOf(ctx, job)
	if err != nil {
		return RunStatus{}, fmt.Errorf("jobs: %w", err)
	}
	for _, sl := range held {
		if sl.RunID == runID {
			return RunStatus{State: string(queue.Running), Record: runs.Record{
				RunID: runID, Job: job, Attempt: 1, Trigger: runs.Schedule, ScheduledAt: sl.ScheduledAt,
				StartedAt: sl.StartedAt, Holder: sl.Holder, Slot: sl.Slot, FencingToken: sl.FencingToken,
			}}, nil
		}
	}
	return RunStatus{}, fmt.Errorf("%w %q", ErrUnknownRun, runID)
}

// findShed is the scheduled run runID as its instant's chunk records say
// it (docs/design-shed.md): found is false when none names it. One that
// cannot be read fails the lookup: it may be the run's.
func (rr *runReader) findShed(ctx context.Context, job, runID string) (RunStatus, bool, error) {
	at, ok := runs.ScheduledAtOf(runID)
	if !ok {
		return RunStatus{}, false, nil
	}
	resp, err := rr.kv.Do(ctx, shed.At(rr.keys, at))
	if err != nil {
		return RunStatus{}, false, fmt.Errorf("jobs: read run %s: %w", runID, err)
	}
	chunks, bad := shed.Decode(rr.keys, resp.Get().Kvs)
	for _, c := range chunks {
		// A shard's id ("tick#k") has its tick's instant; a chunk record
		// holds no shard, so only the tick's own id is answered.
		if r, ok := c.Find(job); ok && r.RunID == runID {
			return RunStatus{State: "finished", Record: r}, true, nil
		}
	}
	if len(bad) > 0 {
		return RunStatus{}, false, fmt.Errorf("jobs: run %s may be in the chunk record %s, which cannot be read: %w", runID, bad[0].Key, bad[0].Err)
	}
	return RunStatus{}, false, nil
}

// findTick is the view of the tick tickID of a sharded job: its fan-in and
// its shards' entries and records, read at one revision (tickview.go).
// found is false when none of them exists.
func (rr *runReader) findTick(ctx context.Context, job, tickID string) (st RunStatus, found bool, err error) {
	resp, err := rr.kv.Txn(ctx).Then(
		clientv3.OpGet(rr.keys.FanIn(job, tickID)),
		clientv3.OpGet(rr.keys.Entry(job, tickID+"#"), clientv3.WithPrefix()),
		clientv3.OpGet(rr.keys.Record(job, tickID+"#"), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return RunStatus{}, false, fmt.Errorf("jobs: read tick %s: %w", tickID, err)
	}
	fanin := resp.Responses[0].GetResponseRange().Kvs
	entries := resp.Responses[1].GetResponseRange().Kvs
	records := resp.Responses[2].GetResponseRange().Kvs
	if len(fanin) == 0 && len(entries) == 0 && len(records) == 0 {
		return RunStatus{}, false, nil
	}
	v := tickRead{id: tickID, job: job}
	if j := rr.config().Job(job); j != nil {
		v.shards = j.Shards
	}
	if len(fanin) > 0 {
		v.fanin = fanin[0].Value
	}
	for _, kv := range entries {
		v.entries = append(v.entries, kv.Value)
	}
	for _, kv := range records {
		v.records = append(v.records, kv.Value)
	}
	return v.view(), true, nil
}
