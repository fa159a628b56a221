package follow

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// End is what follows from the end of an attempt, for the one transaction
// that records it (the worker's release, or the leader's fenced record of a
// lost run): the record, and either the entry of the next attempt, when the
// outcome is retried and retries remain, or the entry's delete. Whatever
// else a run's end causes belongs here too, so that no writer of a record
// can forget it: when no retry follows, the run has ended, and its
// notifications and chained runs (Record, under cfg, the writer's
// configuration) go in too, or for a shard its part of the tick's fan-in
// (Final). An attempt followed by a retry causes neither:
// its outcome reaches the final record as a previous attempt.
//
// entryKey is the attempt's queue entry; "" for a run that has none (an
// assigned run of the lean protocol, docs/protocol.md): its retry then
// takes the queue path under its run id's entry key, and nothing is
// deleted.
func End(k keys.Layout, cfg *config.Config, entryKey string, e *queue.Entry, rec *runs.Record, now time.Time) (ops []clientv3.Op, retry *queue.Entry) {
	ops = queue.RecordOps(k, rec)
	switch {
	case rec.Outcome == runs.Interrupted:
		retry = e.Requeue(now, rec, cfg.Worker.MaxInterruptions)
	case rec.Outcome.Retryable():
		retry = e.Retry(now, rec)
	}
	if retry != nil {
		key := entryKey
		if key == "" {
			key = k.Entry(e.Job, e.RunID)
		}
		return append(ops, clientv3.OpPut(key, retry.Encode())), retry
	}
	if entryKey != "" {
		ops = append(ops, clientv3.OpDelete(entryKey))
	}
	return append(ops, Final(k, cfg, e, rec, now)...), nil
}

// Unstarted is the end of a queued run that never started (skipped or
// cancelled while queued), for queue.Writes.IfUnchanged: the entry's
// delete, its record, and what the record causes (Final).
func Unstarted(k keys.Layout, cfg *config.Config, it *queue.Item, rec *runs.Record) []clientv3.Op {
	ops := append([]clientv3.Op{clientv3.OpDelete(it.Key)}, queue.RecordOps(k, rec)...)
	return append(ops, Final(k, cfg, it.Entry, rec, rec.EndedAt)...)
}
