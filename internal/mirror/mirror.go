// Package mirror keeps a replica's in-memory copy of one etcd prefix: a read
// of the prefix, then a watch from the next revision that resumes where it
// left off after a disconnect and re-reads after a compaction (SPEC rule 8).
package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	delay := 50 * time.Millisecond
	var next int64 // the revision to watch from; 0 = read first
	for ctx.Err() == nil {
		if next == 0 {
			rev, err := load(ctx, client, prefix, h)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				logger.Warn("mirror read failed; retrying", "prefix", prefix, "err", err, "in", delay)
				if !sleep(ctx, delay) {
					break
				}
				delay = min(2*delay, 2*time.Second)
				continue
			}
			next = rev + 1
		}
		var err error
		next, err = follow(ctx, client, prefix, next, h)
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, rpctypes.ErrCompacted) {
			logger.Info("mirror watch compacted; re-reading", "prefix", prefix)
			next = 0
			continue
		}
		logger.Debug("mirror watch ended; resuming", "prefix", prefix, "from", next, "err", err)
		if !sleep(ctx, delay) {
			break
		}
		delay = min(2*delay, 2*time.Second)
	}
	return nil
}

func load(ctx context.Context, client *clientv3.Client, prefix string, h Handler) (int64, error) {
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("mirror: read %s: %w", prefix, err)
	}
	h.Reset(resp.Kvs, resp.Header.Revision)
	return resp.Header.Revision, nil
}

// follow watches from rev and returns the revision to resume from.
func follow(ctx context.Context, client *clientv3.Client, prefix string, rev int64, h Handler) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithProgressNotify())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			if resp.CompactRevision != 0 {
				return rev, rpctypes.ErrCompacted
			}
			return rev, err
		}
		if len(resp.Events) > 0 {
			h.Apply(resp.Events, resp.Header.Revision)
			rev = resp.Events[len(resp.Events)-1].Kv.ModRevision + 1
		} else if resp.Header.Revision >= rev {
			// A progress notification: nothing changed up to here.
			rev = resp.Header.Revision + 1
		}
	}
	return rev, errors.New("mirror: watch channel closed")
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
