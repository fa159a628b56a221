package election

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/session"
)

// hold runs lead for one confirmed term and resigns after it.
func (e *Elector) hold(ctx context.Context, s *session.Session, el *concurrency.Election, l Leadership, lead func(context.Context, Leadership)) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The session ends before the server can expire the lease (the lease
	// guard), so leader work stops before anyone else can win.
	defer context.AfterFunc(s.Context(), func() {
		cancel(fmt.Errorf("election: session ended: %w", context.Cause(s.Context())))
	})()

	term := &l
	e.startTerm(term)
	// Flip IsLeader and the gauge the moment the term ends, not when lead
	// gets around to returning.
	stopFlag := context.AfterFunc(lctx, func() { e.endTerm(term) })
	defer func() {
		stopFlag()
		e.endTerm(term)
	}()

	done := make(chan struct{})
	go func() {
		defer close(done)
		e.watchTerm(lctx, s.Client(), l, cancel)
	}()
	e.log.Info("leading", "key", l.Key, "leader_rev", l.Rev, "lease", int64(l.Lease))
	lead(lctx, l)
	cancel(nil)
	<-done
	cause := context.Cause(lctx)
	if cause == context.Canceled {
		cause = nil // lead returned on its own
	}
	e.log.Info("stopped leading", "leader_rev", l.Rev, "cause", cause)
	e.resign(ctx, s, el)
}

func (e *Elector) startTerm(l *Leadership) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.term = l
	e.metrics.isLeader.Set(1)
}

// endTerm clears l only if it is still the current term: the AfterFunc that
// calls it may run late, after the next term began.
func (e *Elector) endTerm(l *Leadership) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == l {
		e.term = nil
		e.metrics.isLeader.Set(0)
	}
}

// watchTerm ends the term (through lost) when the election key is deleted or
// replaced. A watch that closes (compaction, reconnect to a member that lost
// quorum) is replaced after re-reading the key, so no deletion goes unseen
// (SPEC rule 8). If etcd cannot be reached at all, the session's guard ends
// the term instead.
func (e *Elector) watchTerm(ctx context.Context, client *clientv3.Client, l Leadership, lost context.CancelCauseFunc) {
	retry := newRetry()
	rev := l.Rev + 1
	for ctx.Err() == nil {
		err := e.followTerm(ctx, client, l, rev, lost)
		if ctx.Err() != nil {
			return
		}
		e.log.Info("leader key watch closed; re-reading the key", "err", err, "leader_rev", l.Rev)
		resp, err := client.Get(ctx, l.Key)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				e.log.Warn("cannot read leader key; retrying", "err", err)
				retry.Wait(ctx, e.cfg.Clock)
			}
		case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.Rev:
			lost(ErrLeadershipLost)
			return
		default:
			retry.Reset()
			rev = resp.Header.Revision + 1
		}
	}
}

func (e *Elector) followTerm(ctx context.Context, client *clientv3.Client, l Leadership, rev int64, lost context.CancelCauseFunc) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range client.Watch(wctx, l.Key, clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete || ev.Kv.CreateRevision != l.Rev {
				lost(ErrLeadershipLost)
				return nil
			}
		}
	}
	return ctx.Err()
}
