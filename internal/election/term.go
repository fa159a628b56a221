package election

import (
	"context"
	"fmt"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/watch"
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
// replaced. It follows the key with package watch: a watch that closes is
// resumed after the last revision it delivered, and one whose history was
// compacted starts over with a read of the key, so no deletion goes unseen
// (docs/design.md#the-safety-rules, rule 8). If etcd cannot be reached at all, the session's guard ends
// the term instead. It returns when ctx ends, which lost brings about.
func (e *Elector) watchTerm(ctx context.Context, client *clientv3.Client, l Leadership, lost context.CancelCauseFunc) {
	w := watch.Watch{
		Client:   client,
		Prefixes: []string{l.Key},
		Retry:    etcdRetry,
		Clock:    e.cfg.Clock,
		// No Logger: the follower says what happens itself (Read, Paused).
	}
	_ = w.Run(ctx, &termFollower{client: client, l: l, lost: lost, log: e.log}) // nil: it returns when ctx ends
}

// termFollower is watchTerm's handler: it checks each read and each change
// of the term's key against the term.
type termFollower struct {
	client *clientv3.Client
	l      Leadership
	lost   context.CancelCauseFunc
	log    *slog.Logger
}

// Read reads the key afresh: the term goes on only if it is still there,
// created at the term's revision.
func (f *termFollower) Read(ctx context.Context) (int64, error) {
	resp, err := f.client.Get(ctx, f.l.Key)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("cannot read leader key; retrying", "err", err)
		}
		return 0, fmt.Errorf("election: read leader key: %w", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != f.l.Rev {
		f.lost(ErrLeadershipLost)
		return 0, ErrLeadershipLost
	}
	f.log.Debug("leader key read; the term goes on", "leader_rev", f.l.Rev, "rev", resp.Header.Revision)
	return resp.Header.Revision, nil
}

// Apply ends the term on a delete or a re-creation of the key. The watch is
// of a prefix, so the keys it also matches (a longer lease id) are skipped.
func (f *termFollower) Apply(_ context.Context, _ string, events []*clientv3.Event, _ int64) error {
	for _, ev := range events {
		if string(ev.Kv.Key) != f.l.Key {
			continue
		}
		if ev.Type == clientv3.EventTypeDelete || ev.Kv.CreateRevision != f.l.Rev {
			f.lost(ErrLeadershipLost)
			return ErrLeadershipLost
		}
	}
	return nil
}

// Paused says why the watch closed; with reread, Read comes next.
func (f *termFollower) Paused(_ string, err error, reread bool) {
	if reread {
		f.log.Info("leader key watch closed; re-reading the key", "err", err, "leader_rev", f.l.Rev)
	} else {
		f.log.Info("leader key watch closed; resuming", "err", err, "leader_rev", f.l.Rev)
	}
}

func (f *termFollower) Resumed(string) {}
