// Package follow is what a run's end writes beside its record, in the
// record's own transaction, whoever writes it (the worker's release, the
// leader's record of a lost or missed run, the API's cancel of a queued
// run): the next attempt's entry or the entry's delete (End), and when the
// run has ended, its notifications in the outbox (docs/notify.md#notify), the
// job's health transition, the runs chained after it (section 14), the
// pause of a job with pause_on_failure (section 20), and for a shard its
// part of the tick's fan-in (section 21). Being in the record's
// transaction, none of them exists without the record, and a repeated or
// re-done write of the record adds no second of any.
package follow

import (
	"encoding/json"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Health values of keys.Health.
const (
	healthOK      = "ok"
	healthFailing = "failing"
)

// Caused is what one final record adds to its transaction.
type Caused struct {
	// Ops are the notifications and the chained runs, one op each, and
	// each chained run's spec (written whether or not the run is queued:
	// a spec is the same value whoever writes it, and the write tells the
	// leader's collection of unused specs that it is used again).
	Ops []clientv3.Op
	// Health is the job's health transition (a nested transaction), when
	// a sink of the job wants "recovered" or "failing", and a succeeded
	// run's put of the job's last success. It is apart because one
	// transaction may put a key only once: a writer recording several
	// runs of one job in one transaction keeps only the last one's.
	Health []clientv3.Op
}

// All is every op of f.
func (f Caused) All() []clientv3.Op { return append(f.Ops, f.Health...) }

// Record is what rec, the final record of a run of input, causes under
// cfg, the writer's configuration. job is the run's spec when cfg no longer
// has the job (a record of a job removed from the file still notifies).
func Record(k keys.Layout, cfg *config.Config, job *config.Job, rec *runs.Record, input json.RawMessage, now time.Time) Caused {
	var f Caused
	if j := cfg.Job(rec.Job); j != nil {
		job = j
	}
	if job != nil {
		f = notifications(k, cfg, job, rec, now)
		f.Health = append(f.Health, pauseOnFailure(k, cfg, job, rec, now)...)
	}
	for _, down := range cfg.Downstream(rec.Job) {
		if slices.Contains(down.After.On, string(rec.Outcome)) {
			c := chained(k, cfg, down, rec, input, now)
			f.Ops = append(f.Ops, c.Ops...)
			f.Health = append(f.Health, c.Health...)
		}
	}
	return f
}

// notifications puts one notification per sink that wants the record's
// outcome, and decides "recovered" and "failing" in the transaction
// itself: the job's health key says whether the runs before this one
// ended otherwise ("failing") or succeeded ("ok"), and a nested
// transaction compares it, so two records written one after the other
// cannot both see the same health (no read-modify-write race), and only a
// transition costs a write. A succeeded record also puts the job's last
// success (keys.LastSuccess), beside the health: one per job in a batch.
func notifications(k keys.Layout, cfg *config.Config, job *config.Job, rec *runs.Record, now time.Time) Caused {
	var f Caused
	var recovered, failing []clientv3.Op
	event := string(rec.Outcome)
	for _, s := range cfg.SinksOf(job) {
		if s.Wants(event) {
			n := notify.New(s.Name, event, rec, now)
			f.Ops = append(f.Ops, clientv3.OpPut(k.Notification(s.Name, n.ID), n.Encode()))
		}
		for _, t := range []struct {
			event string
			ops   *[]clientv3.Op
		}{{config.Recovered, &recovered}, {config.Failing, &failing}} {
			if s.Wants(t.event) {
				n := notify.New(s.Name, t.event, rec, now)
				*t.ops = append(*t.ops, clientv3.OpPut(k.Notification(s.Name, n.ID), n.Encode()))
			}
		}
	}
	if rec.Outcome == runs.Succeeded {
		f.Health = append(f.Health, clientv3.OpPut(k.LastSuccess(rec.Job), overdue.SucceededOf(rec).Encode()))
	}
	if h := health(k, rec, recovered, failing); h != nil {
		f.Health = append(f.Health, h...)
	}
	return f
}

// health is the job's health transition, when a sink wants recovered
// (any ops in recovered) or failing (any in failing); nil when none does.
// The job's first runs leave it absent unless a sink wants failing, which
// needs to know that a success came before.
func health(k keys.Layout, rec *runs.Record, recovered, failing []clientv3.Op) []clientv3.Op {
	if recovered == nil && failing == nil {
		return nil
	}
	key := k.Health(rec.Job)
	isFailing := clientv3.Compare(clientv3.Value(key), "=", healthFailing)
	if rec.Outcome == runs.Succeeded {
		then := append(recovered, clientv3.OpPut(key, healthOK))
		var els []clientv3.Op
		if failing != nil {
			// A value compare with an absent key fails: the first
			// success writes "ok", so the failure after it is a change.
			els = []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Version(key), "=", 0)},
				[]clientv3.Op{clientv3.OpPut(key, healthOK)}, nil)}
		}
		return []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{isFailing}, then, els)}
	}
	// A value compare with an absent key fails: a job's first failure
	// takes the else branch too.
	toFailing := clientv3.OpTxn([]clientv3.Cmp{isFailing}, nil, []clientv3.Op{clientv3.OpPut(key, healthFailing)})
	if failing == nil {
		return []clientv3.Op{toFailing}
	}
	wasOK := clientv3.Compare(clientv3.Value(key), "=", healthOK)
	return []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{wasOK}, append(failing, clientv3.OpPut(key, healthFailing)), []clientv3.Op{toFailing})}
}

// chained queues the run of down that rec's end causes, unless it exists
// or existed: its id is derived from the upstream run id, so the nested
// compare makes a repeat a no-op without failing the record's transaction.
// The entry's spec is written beside it. A run that cannot be queued (the
// upstream's input renders no key for it) is recorded skipped instead, and
// that record causes what any record does (Record): its notifications and
// the runs chained after it, in the same nested transaction. Its specs and
// health transition are hoisted out of it, as any record's are: a writer of
// several records in one transaction keeps one of each (queue.DedupSpecs,
// MergeHealth), which etcd could not do for sibling nested transactions.
func chained(k keys.Layout, cfg *config.Config, down *config.Job, rec *runs.Record, input json.RawMessage, now time.Time) Caused {
	id := runs.ChainID(down.Name, rec.RunID)
	e := queue.NewEntry(id, down, cfg.Resources, now, now, 1, runs.Chain)
	e.UpstreamRunID = rec.RunID
	if len(input) > 0 {
		e.Input = input
	}
	key := k.Entry(down.Name, id)
	var f Caused
	var writes []clientv3.Op
	if err := e.RenderKey(); err != nil {
		// The upstream's input renders no key for the downstream: its run
		// is recorded skipped in place of its entry, not silently dropped.
		r := e.NotStarted(runs.Skipped, now, err.Error())
		writes = queue.RecordOps(k, &r)
		sub := Record(k, cfg, down, &r, e.Input, now)
		for _, op := range sub.Ops {
			if queue.IsSpec(k, op) {
				f.Ops = append(f.Ops, op)
			} else {
				writes = append(writes, op)
			}
		}
		f.Health = sub.Health
	} else {
		writes = []clientv3.Op{clientv3.OpPut(key, e.Encode())}
		spec, _ := e.SpecOp(k)
		f.Ops = append(f.Ops, spec)
	}
	f.Ops = append(f.Ops, clientv3.OpTxn([]clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(k.Record(down.Name, id)), "=", 0),
	}, writes, nil))
	return f
}

// MergeHealth is the health transitions of prev and next, one per job: a
// transaction may put a job's health key once, so of two transitions of
// one job the later, next's, is kept.
func MergeHealth(prev, next []clientv3.Op) []clientv3.Op {
	out := slices.Clone(prev)
	for _, op := range next {
		i := slices.IndexFunc(out, func(o clientv3.Op) bool { return healthKey(o) == healthKey(op) })
		if i >= 0 {
			out[i] = op
		} else {
			out = append(out, op)
		}
	}
	return out
}

// healthKey is the key a health transition (notifications) compares, or
// the key a plain put among them (the last success) writes.
func healthKey(op clientv3.Op) string {
	if !op.IsTxn() {
		return string(op.KeyBytes())
	}
	cmps, _, _ := op.Txn()
	if len(cmps) == 0 {
		return ""
	}
	return string(cmps[0].KeyBytes())
}

// NestedDepth is the share of etcd's --max-txn-ops the nested transactions
// among ops need below the transaction that carries them: etcd allows a
// nested transaction what its parent's widest branch (or compares) leaves,
// recursively. A chained run recorded skipped nests its record, its
// notifications and its own chained runs.
func NestedDepth(ops []clientv3.Op) int {
	need := 0
	for _, op := range ops {
		if !op.IsTxn() {
			continue
		}
		cmps, then, els := op.Txn()
		width := max(len(cmps), len(then), len(els))
		need = max(need, width+max(NestedDepth(then), NestedDepth(els)))
	}
	return need
}
