package leader

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// Cursors: jobs/<job>/cursor is the last tick the leader materialized for
// the job. Every materializing write compares it with what this leader
// knows, so a second leader, or this one from a stale view, cannot write a
// tick twice (docs/design.md#the-safety-rules, rule 2).

func (tw *tickWriter) loadCursors(ctx context.Context) error {
	resp, err := tw.d.Client.Get(ctx, tw.d.Keys.Jobs(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("leader: read cursors: %w", err)
	}
	tw.cursors.load(resp.Kvs)
	return nil
}

// cursorBatch: cursor puts per transaction, with their compares and the
// fence under etcd's default limit of 128 operations.
const cursorBatch = 60

// initCursors gives every job without a cursor one at now, many per
// transaction. A job needs a cursor from the moment a leader first sees it:
// without one, a tick that fell in a later leader gap would be
// indistinguishable from a tick before the job existed, and lost silently.
func (tw *tickWriter) initCursors(ctx context.Context) error {
	cfg := tw.d.Config()
	now := tw.d.Clock.Now().UTC()
	value := queue.EncodeCursor(now)
	var pending []string
	for i := range cfg.Jobs {
		if _, ok := tw.cursors.get(cfg.Jobs[i].Name); !ok {
			pending = append(pending, cfg.Jobs[i].Name)
		}
	}
	for len(pending) > 0 {
		batch := pending[:min(len(pending), cursorBatch)]
		pending = pending[len(batch):]
		cmps := []clientv3.Cmp{tw.fence}
		ops := make([]clientv3.Op, 0, len(batch))
		for _, job := range batch {
			key := tw.d.Keys.Cursor(job)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			ops = append(ops, clientv3.OpPut(key, value))
		}
		resp, err := tw.d.Client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("leader: initialize cursors: %w", err)
		}
		if resp.Succeeded {
			for _, job := range batch {
				tw.cursors.forward(job, now)
			}
		}
		// Otherwise a cursor appeared meanwhile or the fence failed: the
		// per-job writes find out which and create the rest one by one.
	}
	return nil
}

// write moves the job's cursor to at, with ops, in one fenced transaction:
// If(fence, cursor as we know it, conds...) Then(ops..., cursor = at). It
// reports whether ops were applied; when only conds failed (the run exists
// already: a tick is never materialized twice, docs/design.md#the-safety-rules, rule 2) it moves the
// cursor alone.
func (tw *tickWriter) write(ctx context.Context, job string, at time.Time, conds []clientv3.Cmp, ops []clientv3.Op) (bool, error) {
	ckey := tw.d.Keys.Cursor(job)
	known, ok := tw.cursors.get(job)
	cursorCmp := tw.cursors.is(job, known, ok)
	cmps := append([]clientv3.Cmp{tw.fence, cursorCmp}, conds...)
	then := append(queue.DedupSpecs(tw.d.Keys, ops), clientv3.OpPut(ckey, queue.EncodeCursor(at)))
	resp, err := tw.d.Client.Txn(ctx).If(cmps...).Then(then...).
		Else(clientv3.OpGet(tw.term.Key), clientv3.OpGet(ckey), clientv3.OpGet(tw.d.Keys.Scheduled(job))).Commit()
	if err != nil {
		return false, fmt.Errorf("leader: materialize %s: %w", job, err)
	}
	if resp.Succeeded {
		tw.cursors.forward(job, at)
		tw.book.wrote(then)
		return true, nil
	}
	if tw.fenceGone(resp) {
		return false, errNotLeader
	}
	cursorKVs := resp.Responses[1].GetResponseRange().Kvs
	var stored time.Time
	storedOK := len(cursorKVs) > 0
	if storedOK {
		stored, _ = queue.DecodeCursor(cursorKVs[0].Value)
	}
	if storedOK != ok || !stored.Equal(known) {
		var count []byte
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			count = kvs[0].Value
		}
		tw.cursors.reset(job, stored, storedOK, count)
		return false, errCursorMoved
	}
	if len(conds) == 0 {
		return false, fmt.Errorf("leader: cursor write for %s failed for no known reason", job)
	}
	_, err = tw.write(ctx, job, at, nil, nil)
	return false, err
}
