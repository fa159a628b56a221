package leader

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A record an assignment still names is kept, whatever the limits
// (docs/design-leader.md#history). An assignment outlives the records of
// its runs until its last run ends (its worker deletes it then) or, its
// worker dead, until the leader resolves it; each late decider of its
// runs (the resolution: lost, missed or moved; the worker's shed: missed)
// writes only over no record. A record pruned before that is no record:
// the fault suite, with history limits of 10 and 3, saw a tick recorded
// missed twice (a skip-heavy job's missed record pruned within seconds,
// then its dead worker's assignment resolved). A job's ticks are assigned
// ahead, so a record to prune is rarely of an instant any assignment
// names: a round reads the assignments' keys only, and the values of
// those at an instant of a record to prune.

// historyOf is a job's records as read and those to delete (prune.go),
// and its ticks in chunk records as the index had them and those to take
// out (prunechunks.go).
type historyOf struct {
	job      string
	records  []*mvccpb.KeyValue
	old      map[string]oldRecord
	ticks    []shed.Tick
	oldTicks []shed.Tick
}

// spareAssigned takes out of each history's records to delete those of a
// tick an assignment names. It reads the assignments at one revision,
// after the histories: every assignment there when they were read, or
// written since, naming a run with a record, is seen. An authorization
// names ticks ahead of the cursor, a resolution's move runs it read
// unrecorded; a take-over (assign.Store.Steal) deletes an assignment and
// writes its jobs, recorded ones too, under a new key in one transaction,
// so one of the two keys is there at any revision: the values are read at
// the keys' revision, not later, when the old key may be gone and the new
// one was not listed.
func (p *pruner) spareAssigned(ctx context.Context, hs []historyOf) error {
	instants := map[time.Time]bool{}
	for _, h := range hs {
		for key := range h.old {
			if at, ok := runs.ScheduledAtOf(p.d.Keys.RecordRun(key)); ok {
				instants[at] = true
			}
		}
	}
	if len(instants) == 0 {
		return nil
	}
	resp, err := p.d.Client.Get(ctx, p.d.Keys.Assignments(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("leader: read assignments to prune: %w", err)
	}
	var named []string
	for _, kv := range resp.Kvs {
		if _, at, _, ok := p.d.Keys.ParseAssignment(string(kv.Key)); ok && instants[at] {
			named = append(named, string(kv.Key))
		}
	}
	if len(named) == 0 {
		return nil // the steady state: no assignment at a record's instant
	}
	spare, whole, err := p.assignedRecords(ctx, named, resp.Header.Revision)
	if err != nil {
		return err
	}
	for _, h := range hs {
		for key := range h.old {
			at, _ := runs.ScheduledAtOf(p.d.Keys.RecordRun(key))
			if spare[key] || whole[at] {
				delete(h.old, key)
			}
		}
	}
	return nil
}

// assignedRecords are the record keys of the runs the assignments at
// keys name at revision rev, and the instants of any that does not
// decode: every record of those is kept.
func (p *pruner) assignedRecords(ctx context.Context, keys []string, rev int64) (spare map[string]bool, whole map[time.Time]bool, err error) {
	spare, whole = map[string]bool{}, map[time.Time]bool{}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), maxOpsPerTxn)]
		keys = keys[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, k := range batch {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(rev))
		}
		resp, err := p.d.Client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, nil, fmt.Errorf("leader: read assignments to prune: %w", err)
		}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				a, err := assign.Decode(p.d.Keys, string(kv.Key), kv.Value)
				if err != nil {
					_, at, _, _ := p.d.Keys.ParseAssignment(string(kv.Key))
					whole[at] = true
					continue
				}
				for _, j := range a.Jobs {
					spare[p.d.Keys.Record(j.Name, a.RunID(j.Name))] = true
				}
			}
		}
	}
	return spare, whole, nil
}
