package follow

import (
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Final is what a run's final record (no retry follows) adds to the
// transaction that writes it: for an unsharded run its notifications and
// chained runs (Record); for a shard, its part of the fan-in (FanIn).
func Final(k keys.Layout, cfg *config.Config, e *queue.Entry, rec *runs.Record, now time.Time) []clientv3.Op {
	if _, n, ok := e.Shard(); ok {
		return FanIn(k, cfg, e, n, rec, now)
	}
	if _, i, ok := runs.ShardOf(e.RunID); ok && !e.Resolved() {
		// Not resolved (a queued shard cancelled through the API): the
		// writer's config says how many shards the tick has.
		if j := cfg.Job(e.Job); j != nil && j.Sharded() && i < j.Shards {
			return FanIn(k, cfg, e, j.Shards, rec, now)
		}
	}
	return Record(k, cfg, e.JobSpec(), rec, e.Input, now).All()
}

// FanIn is a shard's final end's part of its tick's fan-in, decided by
// etcd in the shard's end transaction without a read (docs/design.md,
// "Sharded jobs"): it raises the worst register to its own outcome's
// severity when that is higher, and puts the fan-in key once more. The end
// that finds the key at Version n is the last of the n final ends (the
// tick's authorization made Version 1; a final end is applied once per
// shard, its transaction comparing the shard's record absent or its slot
// token), and writes the tick's record and what it causes, on the worst of
// the stored register and its own outcome: one nested branch per stored
// value, all compared before any write of the transaction.
func FanIn(k keys.Layout, cfg *config.Config, e *queue.Entry, n int, rec *runs.Record, now time.Time) []clientv3.Op {
	tick := e.Tick()
	fanin, worst := k.FanIn(e.Job, tick), k.FanInWorst(e.Job, tick)
	mine := runs.Severity(rec.Outcome)
	var ops []clientv3.Op
	if mine > runs.Severity(runs.Succeeded) {
		ops = append(ops, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(worst), "<", string(mine))},
			[]clientv3.Op{clientv3.OpPut(worst, string(mine))}, nil))
	}
	// The branches, the mildest first: the worst is mine unless the
	// register holds a higher severity.
	last := tickOps(k, cfg, e, n, runs.OfSeverity(mine), now)
	for _, o := range runs.Outcomes() {
		if s := runs.Severity(o); s > mine {
			last = []clientv3.Op{clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.Value(worst), "<", string(s))},
				last, tickOps(k, cfg, e, n, o, now))}
		}
	}
	return append(ops, clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Version(fanin), "=", n)},
		last,
		[]clientv3.Op{clientv3.OpPut(fanin, queue.FanInPending)}))
}

// tickOps are the writes of the tick's record with outcome o and what it
// causes: its notifications and chained runs, once per tick.
func tickOps(k keys.Layout, cfg *config.Config, e *queue.Entry, n int, o runs.Outcome, now time.Time) []clientv3.Op {
	t := e.TickRecord(n, o, now)
	rec := t.Record(e.UpstreamRunID)
	var input json.RawMessage
	if j := e.JobSpec(); j != nil {
		input = j.DefaultInput()
	}
	ops := []clientv3.Op{clientv3.OpPut(k.FanIn(e.Job, t.RunID), queue.EncodeTick(t))}
	return append(ops, Record(k, cfg, e.JobSpec(), &rec, input, now).All()...)
}
