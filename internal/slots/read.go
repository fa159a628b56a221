package slots

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// The held slots as etcd stores them, read when asked: the API, the
// leader's overdue judge and the gauge of slots in use read them so, and
// no replica keeps a view of every slot for them (a view costs each
// replica two watch events per run, though one replica runs it:
// docs/design-admission.md#the-slot-view).

// Held reads every held slot, jobs before resources, by name and index,
// at one revision.
func (s *Semaphore) Held(ctx context.Context) ([]Info, error) {
	resp, err := s.client.Txn(ctx).Then(
		clientv3.OpGet(s.layout.Slots(), clientv3.WithPrefix()),
		clientv3.OpGet(s.layout.Resources(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("slots: read the held slots: %w", err)
	}
	var kvs []*mvccpb.KeyValue
	for _, r := range resp.Responses {
		kvs = append(kvs, r.GetResponseRange().Kvs...)
	}
	return s.Decode(kvs), nil
}

// HeldOf reads job's held slots, its concurrency keys' too, by key and
// index.
func (s *Semaphore) HeldOf(ctx context.Context, job string) ([]Info, error) {
	resp, err := s.client.Do(ctx, s.HeldOfOp(job))
	if err != nil {
		return nil, fmt.Errorf("slots: read the held slots of %s: %w", job, err)
	}
	return s.Decode(resp.Get().Kvs), nil
}

// HeldOfOp is the read HeldOf makes, for a caller that reads job's slots
// in a transaction of its own, at one revision with other keys; Decode
// takes its answer.
func (s *Semaphore) HeldOfOp(job string) clientv3.Op {
	return clientv3.OpGet(s.layout.JobSlots(job), clientv3.WithPrefix())
}

// Running reads how many slots each job holds, whatever their concurrency
// keys (keys only); a job holding none is absent. With one job named, only
// its slots are counted.
func (s *Semaphore) Running(ctx context.Context, only ...string) (map[string]int, error) {
	prefix := s.layout.Slots()
	if len(only) == 1 {
		prefix = s.layout.JobSlots(only[0])
	}
	resp, err := s.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("slots: count the held slots: %w", err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		if kind, name, _, ok := parseKey(s.layout, string(kv.Key)); ok && kind == JobSlot {
			job, _ := keys.SplitSlotGroup(name)
			out[job]++
		}
	}
	return out, nil
}

// Decode is the held slots among kvs, as GET /api/v1/slots shows them, in
// Held's order; keys that are not slot keys are left out.
func (s *Semaphore) Decode(kvs []*mvccpb.KeyValue) []Info {
	es := make([]entry, 0, len(kvs))
	for _, kv := range kvs {
		if kind, name, index, ok := parseKey(s.layout, string(kv.Key)); ok {
			es = append(es, entry{group: group{kind, name}, index: index, raw: kv.Value, token: kv.CreateRevision, lease: kv.Lease})
		}
	}
	return s.infosOf(es)
}

// infosOf decodes es, sorted in List's order.
func (s *Semaphore) infosOf(es []entry) []Info {
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name), cmp.Compare(a.index, b.index))
	})
	list := make([]Info, 0, len(es))
	for _, e := range es {
		var v Value
		if err := json.Unmarshal(e.raw, &v); err != nil {
			// Still held, and shown so: only who holds it is unknown.
			s.logger.Debug("slot key holds no valid value", "job_or_resource", e.name, "slot", e.index, "err", err)
		}
		info := Info{
			Slot:         e.index,
			RunID:        v.RunID,
			Holder:       v.Holder,
			FencingToken: e.token,
			StartedAt:    v.StartedAt,
			ScheduledAt:  v.ScheduledAt,
		}
		if e.kind == ResourceSlot {
			info.Resource = e.name
		} else {
			info.Job, info.ConcurrencyKey = keys.SplitSlotGroup(e.name)
		}
		list = append(list, info)
	}
	return list
}
