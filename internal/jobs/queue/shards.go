package queue

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A tick of a sharded job (docs/design-sharded.md) is written as one queue entry
// per shard, a part of ShardPart shards a transaction: etcd's default
// --max-txn-ops (128) cannot carry the 256 shards of one tick. Each shard's
// put is its own nested transaction guarded by "no entry and no record of
// that shard", so a part written again (a leader that died between parts,
// and its successor redoing the tick) writes only the shards missing. The
// tick's fan-in key and worst register are created with the first part, so
// that a shard of that part that ends before the last part is written
// already counts.

// ShardPart is how many shards one transaction of a tick's fan-out writes.
const ShardPart = 64

// FanInPending is the fan-in key's value until the last shard's end
// writes the tick's record over it.
const FanInPending = "pending"

// Shard reports which shard of how many the entry's run is; ok is false
// for a run of an unsharded job (or one whose spec is not resolved).
func (e *Entry) Shard() (k, n int, ok bool) {
	if !e.resolved || !e.Spec.Sharded() {
		return 0, 0, false
	}
	_, k, ok = runs.ShardOf(e.RunID)
	if !ok || k >= e.Spec.Shards {
		return 0, 0, false
	}
	return k, e.Spec.Shards, true
}

// Tick is the run id of the tick (or trigger) a shard run belongs to.
func (e *Entry) Tick() string {
	tick, _, _ := runs.ShardOf(e.RunID)
	return tick
}

// ShardEntries are the entries of the shards of e, the entry of a tick of a
// sharded job made by NewEntry (its key rendered): shard k has run id
// <tick>#<k>, the tick's input with shard k's item of shard_inputs merged
// over it, and the concurrency group of its index, so max_concurrency holds
// per shard index.
func (e *Entry) ShardEntries() []*Entry {
	n := e.Spec.Shards
	out := make([]*Entry, n)
	for k := range n {
		s := *e
		s.RunID = runs.ShardID(e.RunID, k)
		if in, err := e.Spec.ShardInput(e.Input, k); err == nil {
			s.Input = in
		}
		s.ConcurrencyKey = ShardKey(e.ConcurrencyKey, k)
		out[k] = &s
	}
	return out
}

// ShardKey is the concurrency key of shard k of a run whose key is key.
func ShardKey(key string, k int) string {
	if key == "" {
		return "shard-" + strconv.Itoa(k)
	}
	return key + "/shard-" + strconv.Itoa(k)
}

// FanOutParts are the writes of a tick's shard entries, one slice a
// transaction, the first creating the tick's fan-in key (unless it exists)
// and writing the spec. Every shard put is guarded by its own absence, so
// the parts may be written again in any order.
func FanOutParts(k keys.Layout, shards []*Entry) [][]clientv3.Op {
	if len(shards) == 0 {
		return nil
	}
	first := shards[0]
	fanin, worst := k.FanIn(first.Job, first.Tick()), k.FanInWorst(first.Job, first.Tick())
	var parts [][]clientv3.Op
	for i, part := range partsOf(shards) {
		var ops []clientv3.Op
		if i == 0 {
			if spec, ok := first.SpecOp(k); ok {
				ops = append(ops, spec)
			}
			ops = append(ops, clientv3.OpTxn(
				[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(fanin), "=", 0)},
				[]clientv3.Op{clientv3.OpPut(fanin, FanInPending), clientv3.OpPut(worst, string(runs.Severity(runs.Succeeded)))}, nil))
		}
		parts = append(parts, append(ops, shardPuts(k, part)...))
	}
	return parts
}

// partsOf divides a tick's shards into the parts of its fan-out, ShardPart
// a transaction: the one division FanOutParts writes by and ReadFanOut
// reads by.
func partsOf(shards []*Entry) [][]*Entry {
	return slices.Collect(slices.Chunk(shards, ShardPart))
}

// shardPuts put each of shards' entries, each guarded by its own absence:
// no entry and no record of that shard.
func shardPuts(k keys.Layout, shards []*Entry) []clientv3.Op {
	ops := make([]clientv3.Op, len(shards))
	for i, s := range shards {
		key := k.Entry(s.Job, s.RunID)
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(k.Record(s.Job, s.RunID)), "=", 0),
		}, []clientv3.Op{clientv3.OpPut(key, s.Encode())}, nil)
	}
	return ops
}

// TickRecord is the record of a sharded job's tick, the value of its
// fan-in key once its last shard ended: what its chains and notifications
// are caused by.
type TickRecord struct {
	RunID       string       `json:"run_id"`
	Job         string       `json:"job"`
	Trigger     runs.Trigger `json:"trigger"`
	ScheduledAt time.Time    `json:"scheduled_at"`
	EndedAt     time.Time    `json:"ended_at"`
	Outcome     runs.Outcome `json:"outcome"`
	Shards      int          `json:"shards"`
}

// TickRecord is the record of e's tick, a tick of n shards that ended
// with outcome o at now.
func (e *Entry) TickRecord(n int, o runs.Outcome, now time.Time) TickRecord {
	t := TickRecord{RunID: e.Tick(), Job: e.Job, Trigger: e.Trigger, ScheduledAt: e.ScheduledAt, EndedAt: now.UTC(), Outcome: o, Shards: n}
	if t.Trigger == runs.Retry {
		// A retried shard no longer says what made the tick.
		t.Trigger = runs.Manual
		if _, ok := runs.ScheduledAtOf(t.RunID); ok {
			t.Trigger = runs.Schedule
		}
	}
	return t
}

// Record is the run record the tick's end causes its chains and
// notifications with: a run of the tick's id that held no slot.
func (t TickRecord) Record(upstreamRunID string) runs.Record {
	return runs.Record{RunID: t.RunID, Job: t.Job, Attempt: 1, Trigger: t.Trigger, ScheduledAt: t.ScheduledAt,
		EndedAt: t.EndedAt, Outcome: t.Outcome, Slot: noSlot, UpstreamRunID: upstreamRunID}
}

// EncodeTick is the fan-in key's value once the tick's last shard ended.
func EncodeTick(t TickRecord) string {
	b, _ := json.Marshal(t) // strings, times and ints: cannot fail
	return string(b)
}

// DecodeTick reads a fan-in key's value; ok is false while the tick's
// shards have not all ended.
func DecodeTick(b []byte) (TickRecord, bool) {
	var t TickRecord
	if string(b) == FanInPending || json.Unmarshal(b, &t) != nil {
		return TickRecord{}, false
	}
	return t, true
}
