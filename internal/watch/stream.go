package watch

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// message is what a stream tells Follow's goroutine, which alone calls the
// handler.
type message struct {
	kind   kind
	prefix string
	events []*clientv3.Event // response
	rev    int64             // response
	err    error             // paused, compacted
}

type kind int

const (
	response  kind = iota // events or a progress notification
	paused                // the watch ended and will be opened again
	resumed               // it was
	compacted             // it cannot go on; the stream has stopped
)

// stream is one prefix's watch, opened again whenever it ends, from next.
type stream struct {
	w      *Watch
	prefix string
	next   int64 // the revision to watch from: one past the last delivered
	out    chan<- message
	retry  backoff.Backoff
}

func (s *stream) run(ctx context.Context) {
	s.retry = s.w.Retry.Start()
	for first := true; ; first = false {
		err := s.watch(ctx, !first)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			s.send(ctx, message{kind: compacted, err: fmt.Errorf("watch %s from revision %d: %w", s.prefix, s.next, err)})
			return
		}
		s.w.Logger.Info("watch: closed; resuming", "prefix", s.prefix, "from", s.next, "err", err, "in", s.retry.Delay())
		if !s.send(ctx, message{kind: paused, err: err}) || !s.retry.Wait(ctx, s.w.Clock) {
			return
		}
	}
}

// watch opens one watch from next and forwards its responses until it
// ends. Every response it receives resets the backoff: the cluster answers.
func (s *stream) watch(ctx context.Context, resume bool) error {
	// Without a leader a member's watch can fall silent; this makes it
	// close, so it is resumed, possibly on another member.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(s.next)}
	if s.w.ProgressNotify {
		opts = append(opts, clientv3.WithProgressNotify())
	}
	wch := s.w.Client.Watch(wctx, s.prefix, opts...)
	if resume && !s.send(ctx, message{kind: resumed}) {
		return ctx.Err()
	}
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return rpctypes.ErrCompacted
		}
		if err := resp.Err(); err != nil {
			return err
		}
		s.retry.Reset()
		if !s.forward(ctx, resp) {
			return ctx.Err()
		}
	}
	return errClosed
}

// forward hands over what resp adds past next and moves next on; false when
// ctx ended first.
func (s *stream) forward(ctx context.Context, resp clientv3.WatchResponse) bool {
	events := resp.Events
	// etcd should never repeat an event, but a handler is promised each
	// once: drop any that are not past what was delivered.
	for len(events) > 0 && events[0].Kv.ModRevision < s.next {
		events = events[1:]
	}
	switch {
	case len(events) > 0:
		if !s.send(ctx, message{kind: response, events: events, rev: resp.Header.Revision}) {
			return false
		}
		s.next = events[len(events)-1].Kv.ModRevision + 1
	case resp.IsProgressNotify() && resp.Header.Revision >= s.next:
		if !s.send(ctx, message{kind: response, rev: resp.Header.Revision}) {
			return false
		}
		s.next = resp.Header.Revision + 1
	}
	return true
}

func (s *stream) send(ctx context.Context, m message) bool {
	m.prefix = s.prefix
	select {
	case s.out <- m:
		return true
	case <-ctx.Done():
		return false
	}
}
