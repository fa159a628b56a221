package backfill

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/pruned"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
)

// snapshot is what one revision says about a job's ticks: where its cursor
// is, and the runs that exist in one of the places an authorized
// tick lives until it is done.
type snapshot struct {
	rev         int64
	cursor      time.Time
	cursorKnown bool
	records     map[string]bool // run ids
	entries     map[string]bool // run ids
	assigned    map[int64]bool  // instants (UnixNano) an assignment names the job at
	shed        map[int64]bool  // instants (UnixNano) a chunk record names the job at
	pruned      pruned.Stretches
}

// read takes the snapshot in one transaction: the cursor, the job's
// records and entries (keys only), every assignment (values: the jobs
// they name are in them), the chunk records of ticks due in [from, to)
// (docs/design-shed.md) and the job's pruned stretches: a record is in
// one before it is deleted, so a tick with none at this revision, in no
// stretch, never had one.
func (b *Backfiller) read(ctx context.Context, job string, from, to time.Time) (*snapshot, error) {
	k := b.keys
	resp, err := b.kv.Txn(ctx).Then(
		clientv3.OpGet(k.Cursor(job)),
		clientv3.OpGet(k.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.JobQueue(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.Assignments(), clientv3.WithPrefix()),
		clientv3.OpGet(k.Pruned(job)),
		shed.Between(k, from, to),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("backfill: read job %s: %w", job, err)
	}
	s := &snapshot{rev: resp.Header.Revision, records: map[string]bool{}, entries: map[string]bool{}, assigned: map[int64]bool{}, shed: map[int64]bool{}}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		if s.cursor, err = queue.DecodeCursor(kvs[0].Value); err != nil {
			return nil, fmt.Errorf("backfill: job %s: cursor %q: %w", job, kvs[0].Value, err)
		}
		s.cursorKnown = true
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		s.records[k.RecordRun(string(kv.Key))] = true
	}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		s.entries[k.RecordRun(string(kv.Key))] = true
	}
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		if at, ok := b.assignedAt(job, string(kv.Key), kv.Value); ok {
			s.assigned[at.UnixNano()] = true
		}
	}
	if kvs := resp.Responses[4].GetResponseRange().Kvs; len(kvs) > 0 {
		if s.pruned, err = pruned.Decode(kvs[0].Value); err != nil {
			b.log.Warn("backfill: the job's pruned stretches cannot be read; every tick counts as existing", "job", job, "err", err)
			s.pruned = pruned.Everything()
		}
	}
	b.readShed(s, job, resp.Responses[5].GetResponseRange().Kvs)
	return s, nil
}

// readShed marks the instants whose chunk records name job. One that
// cannot be read counts as naming it, as an assignment does.
func (b *Backfiller) readShed(s *snapshot, job string, kvs []*mvccpb.KeyValue) {
	chunks, bad := shed.Decode(b.keys, kvs)
	for _, c := range chunks {
		if _, ok := c.Find(job); ok {
			s.shed[c.At.UnixNano()] = true
		}
	}
	for _, u := range bad {
		b.log.Warn("backfill: a chunk record cannot be read; its instant counts as taken", "key", u.Key, "err", u.Err)
		if !u.At.IsZero() {
			s.shed[u.At.UnixNano()] = true
		}
	}
}

// assignedAt is the instant of the assignment at key when it names job.
// One that cannot be read counts as naming it: the tick might be in it,
// and backfill errs on the side of not running a tick.
func (b *Backfiller) assignedAt(job, key string, value []byte) (time.Time, bool) {
	a, err := assign.Decode(b.keys, key, value)
	if err == nil {
		return a.At, a.Has(job)
	}
	if _, at, _, ok := b.keys.ParseAssignment(key); ok {
		b.log.Warn("backfill: an assignment cannot be read; its instant counts as taken", "key", key, "err", err)
		return at, true
	}
	return time.Time{}, false // a claim marker or another key under the prefix
}
