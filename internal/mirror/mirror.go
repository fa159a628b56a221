// Package mirror keeps a replica's in-memory copy of one etcd prefix: a read
// of the prefix, then a watch from the next revision that resumes where it
// left off after a disconnect and re-reads after a compaction (docs/design.md#the-safety-rules, rule 8).
// The watching is package watch's; mirror reads the whole prefix and hands
// over its keys.
package mirror

import (
	"context"
	"fmt"
	"log/slog"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/watch"
)

// Handler receives the prefix: Reset with every key at rev (the first read
// and each re-read), then Apply with each watch response's events in
// revision order. Calls come from one goroutine. Events carry no PrevKv:
// asking for it makes the member read the key's previous revision from its
// backend once per event and watcher, and a handler keeps what it needs.
type Handler interface {
	Reset(kvs []*mvccpb.KeyValue, rev int64)
	Apply(events []*clientv3.Event, rev int64)
}

// Run mirrors prefix into h until ctx ends.
func Run(ctx context.Context, client *clientv3.Client, prefix string, h Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := watch.Watch{
		Client:   client,
		Prefixes: []string{prefix},
		// A quiet prefix's watch still moves on, so a resume after a
		// disconnect asks for recent history, not history compacted since.
		ProgressNotify: true,
		Logger:         logger.With("mirror", prefix),
	}
	return w.Run(ctx, copier{client: client, prefix: prefix, h: h})
}

// copier is the watch.Handler of a mirror.
type copier struct {
	client *clientv3.Client
	prefix string
	h      Handler
}

func (c copier) Read(ctx context.Context) (int64, error) {
	resp, err := c.client.Get(ctx, c.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("mirror: read %s: %w", c.prefix, err)
	}
	c.h.Reset(resp.Kvs, resp.Header.Revision)
	return resp.Header.Revision, nil
}

// Apply passes events on; a progress notification has nothing for h.
func (c copier) Apply(_ context.Context, _ string, events []*clientv3.Event, rev int64) error {
	if len(events) > 0 {
		c.h.Apply(events, rev)
	}
	return nil
}
