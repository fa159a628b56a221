// Package watch keeps a caller's state current with one or more etcd
// prefixes: a read, then a watch of each prefix from the revision after it.
// A watch that closes (a lost connection, a member without a leader) is
// opened again from the revision after the last one it delivered, so no
// change is missed or handed over twice; a watch whose history has been
// compacted cannot go on, and the caller reads afresh (docs/design.md#the-safety-rules, rule 8).
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// Handler is the state a Watch keeps current. Its calls come from one
// goroutine, never two at once.
type Handler interface {
	// Read replaces the state with a fresh read of every prefix, at one
	// revision, and returns that revision: the watches go on from the one
	// after it.
	Read(ctx context.Context) (rev int64, err error)
	// Apply takes one watch response of prefix: its events in revision
	// order, each newer than any event of prefix handed over before, or
	// none for a progress notification (nothing changed up to rev). rev is
	// the response's header revision. An error ends the watches and makes
	// Run read afresh, since the state can no longer be trusted to follow.
	Apply(ctx context.Context, prefix string, events []*clientv3.Event, rev int64) error
}

// Pauser is a Handler that must know while its state may lag. Paused is
// called when the watch of prefix ended, with why: with reread, Run reads
// afresh next (the history is gone or Apply failed); without, the watch is
// opened again from where it stopped after the backoff, and Resumed is called
// then.
type Pauser interface {
	Paused(prefix string, err error, reread bool)
	Resumed(prefix string)
}

// Watch follows Prefixes on Client, each on its own watch from its own
// revision: one prefix can be ahead of another.
type Watch struct {
	Client   *clientv3.Client
	Prefixes []string
	// ProgressNotify asks etcd for progress notifications on a quiet
	// prefix, so a resumed watch starts from a recent revision rather than
	// one the history may have lost by then.
	ProgressNotify bool
	// Retry paces retried reads and resumed watches; the zero value is
	// DefaultRetry.
	Retry  backoff.Policy
	Clock  clockwork.Clock // nil: the real clock
	Logger *slog.Logger    // nil: no logs
}

// Run reads, follows, and reads again after each compaction or failed
// Apply, until ctx ends; it returns nil then. A failed read is retried after
// the backoff. A Retry no loop can use is an error, at once.
func (w Watch) Run(ctx context.Context, h Handler) error {
	w = w.withDefaults()
	if err := w.Retry.Validate(); err != nil {
		return fmt.Errorf("watch %v: Retry: %w", w.Prefixes, err)
	}
	retry := w.Retry.Start()
	for {
		rev, err := h.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.Logger.Warn("watch: read failed; retrying", "prefixes", w.Prefixes, "err", err, "in", retry.Delay())
			if !retry.Wait(ctx, w.Clock) {
				return nil
			}
			continue
		}
		retry.Reset()
		from := make([]int64, len(w.Prefixes))
		for i := range from {
			from[i] = rev + 1
		}
		err = w.Follow(ctx, h, from...)
		if ctx.Err() != nil {
			return nil
		}
		if p, ok := h.(Pauser); ok {
			for _, prefix := range w.Prefixes {
				p.Paused(prefix, err, true)
			}
		}
		// At once: etcd answered, it is only the history or the handler
		// that cannot go on.
		w.Logger.Info("watch: re-reading", "prefixes", w.Prefixes, "err", err)
	}
}

// Follow watches Prefixes[i] from from[i] and hands each response to h
// until ctx ends (it returns ctx's error), Apply fails (its error), or a
// prefix's history has been compacted past where its watch stands (an error
// wrapping rpctypes.ErrCompacted). Any other end of a watch is resumed after
// the backoff, from the revision after the last one delivered.
func (w Watch) Follow(ctx context.Context, h Handler, from ...int64) error {
	if len(from) != len(w.Prefixes) {
		return fmt.Errorf("watch: %d start revisions for %d prefixes", len(from), len(w.Prefixes))
	}
	w = w.withDefaults()
	pauser, _ := h.(Pauser)
	msgs := make(chan message)
	sctx, stop := context.WithCancel(ctx)
	streams := make(chan struct{}, len(w.Prefixes))
	defer func() {
		stop()
		for range w.Prefixes {
			<-streams
		}
	}()
	for i, prefix := range w.Prefixes {
		s := &stream{w: &w, prefix: prefix, next: from[i], out: msgs}
		go func() {
			defer func() { streams <- struct{}{} }()
			s.run(sctx)
		}()
	}
	for {
		var m message
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m = <-msgs:
		}
		switch m.kind {
		case compacted:
			return m.err
		case paused:
			if pauser != nil {
				pauser.Paused(m.prefix, m.err, false)
			}
		case resumed:
			if pauser != nil {
				pauser.Resumed(m.prefix)
			}
		case response:
			if err := h.Apply(ctx, m.prefix, m.events, m.rev); err != nil {
				return fmt.Errorf("watch: apply %s at revision %d: %w", m.prefix, m.rev, err)
			}
		}
	}
}

// DefaultRetry paces a watch's retries against an etcd that fails: 50ms
// resumes at once after a leader election, 2s bounds how late a replica
// notices a healed cluster, and half of each delay is random so the
// replicas whose watches broke together do not all read again at once.
var DefaultRetry = backoff.Policy{Min: 50 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}

func (w Watch) withDefaults() Watch {
	if w.Retry == (backoff.Policy{}) {
		w.Retry = DefaultRetry
	}
	if w.Clock == nil {
		w.Clock = clockwork.NewRealClock()
	}
	if w.Logger == nil {
		w.Logger = slog.New(slog.DiscardHandler)
	}
	return w
}

// errClosed: the watch channel closed without a response saying why (the
// client is closing, or the member lost its leader, see WithRequireLeader).
var errClosed = errors.New("watch: channel closed")
