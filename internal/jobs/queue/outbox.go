package queue

import (
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/notify"
)

// Outbox mirrors outbox/: the notifications written with their records
// and not yet delivered. Every replica keeps it (the dashboard and the
// pending gauge read it); the leader delivers from it.
type Outbox struct {
	mu      sync.Mutex
	items   map[string]*Waiting
	changed chan struct{}
}

// Waiting is one notification waiting in the outbox, at Key as of ModRev.
type Waiting struct {
	Key    string
	ModRev int64
	*notify.Notification
}

// NewOutbox is an empty view.
func NewOutbox() *Outbox {
	return &Outbox{items: map[string]*Waiting{}, changed: make(chan struct{})}
}

// Reset implements mirror.Handler.
func (o *Outbox) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	items := make(map[string]*Waiting, len(kvs))
	for _, kv := range kvs {
		if p := decodePending(kv); p != nil {
			items[p.Key] = p
		}
	}
	o.mu.Lock()
	o.items = items
	o.signalLocked()
	o.mu.Unlock()
}

// Apply implements mirror.Handler.
func (o *Outbox) Apply(events []*clientv3.Event, _ int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ev := range events {
		if ev.Type == clientv3.EventTypeDelete {
			delete(o.items, string(ev.Kv.Key))
			continue
		}
		if p := decodePending(ev.Kv); p != nil {
			o.items[p.Key] = p
		}
	}
	o.signalLocked()
}

// A value that does not decode is left in etcd for a newer version to
// deliver; this one cannot.
func decodePending(kv *mvccpb.KeyValue) *Waiting {
	n, err := notify.Decode(kv.Value)
	if err != nil {
		return nil
	}
	return &Waiting{Key: string(kv.Key), ModRev: kv.ModRevision, Notification: n}
}

func (o *Outbox) signalLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Changed is closed at the next change.
func (o *Outbox) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Len is the number of notifications waiting.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items)
}

// List is every waiting notification, oldest first.
func (o *Outbox) List() []*Waiting {
	o.mu.Lock()
	out := make([]*Waiting, 0, len(o.items))
	for _, p := range o.items {
		out = append(out, p)
	}
	o.mu.Unlock()
	slices.SortFunc(out, func(a, b *Waiting) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// ByJob counts the waiting notifications of each job.
func (o *Outbox) ByJob() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for _, w := range o.items {
		out[w.Record.Job]++
	}
	return out
}

// Backlog sums up what waits: how many notifications for each sink, and
// when the oldest of them was created (zero when none waits).
func (o *Outbox) Backlog() (bySink map[string]int, oldest time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	bySink = map[string]int{}
	for _, w := range o.items {
		bySink[w.Sink]++
		if oldest.IsZero() || w.CreatedAt.Before(oldest) {
			oldest = w.CreatedAt
		}
	}
	return bySink, oldest
}
