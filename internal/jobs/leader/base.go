package leader

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/election"
)

// base is what the leader and each of its actors (the deliverer, the
// reaper, the pruner...) share for one term: the deps, read only, and the
// term whose fence every write carries, so a deposed leader's writes fail
// (docs/design.md#the-safety-rules, rule 1). Each actor keeps its own state
// beside it.
type base struct {
	d     Deps
	term  election.Leadership
	fence clientv3.Cmp
}

// fenceGone reports, from a fenced transaction that failed and whose Else
// began with a read of the election key, whether the fence is what failed:
// the key is gone or belongs to another term.
func (b *base) fenceGone(resp *clientv3.TxnResponse) bool {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	return len(kvs) == 0 || kvs[0].CreateRevision != b.term.Rev
}

// fenced commits ops if the term and cmps hold. ok is false when a
// compare failed; the error is errNotLeader when the term is over.
func (b *base) fenced(ctx context.Context, cmps []clientv3.Cmp, ops ...clientv3.Op) (ok bool, err error) {
	tr, err := b.d.Client.Txn(ctx).If(append([]clientv3.Cmp{b.fence}, cmps...)...).Then(ops...).
		Else(clientv3.OpGet(b.term.Key)).Commit()
	if err != nil {
		return false, fmt.Errorf("leader: fenced write: %w", err)
	}
	if !tr.Succeeded && b.fenceGone(tr) {
		return false, errNotLeader
	}
	return tr.Succeeded, nil
}

// pause waits until t, or returns false when ctx ends first.
func (b *base) pause(ctx context.Context, t time.Time) bool {
	d := t.Sub(b.d.Clock.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := b.d.Clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.Chan():
		return true
	}
}
