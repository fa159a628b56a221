// Package outbox is the notification outbox (outbox/<sink>/<id>, docs/notify.md#notify) as every replica sees it: the notifications written with
// their records (package follow) and not yet delivered. The leader
// delivers from it and deletes what it delivered; the dashboard and the
// pending gauge read it.
package outbox

import (
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/notify"
)

// View mirrors outbox/: the notifications waiting, by key. The leader
// delivers from it, woken by Changed.
type View struct {
	*mirror.Map[string, *Waiting]
}

// Waiting is one notification waiting in the outbox, at Key as of ModRev.
type Waiting struct {
	Key    string
	ModRev int64
	*notify.Notification
}

// NewView is an empty view; mirror.Run fills it.
func NewView() *View {
	return &View{mirror.NewMap(func(key string) (string, bool) { return key, true }, decodePending)}
}

// A value that does not decode is left in etcd for a newer version to
// deliver; this one cannot.
func decodePending(kv *mvccpb.KeyValue, _ *Waiting, _ bool) (*Waiting, bool) {
	n, err := notify.Decode(kv.Value)
	if err != nil {
		return nil, false
	}
	return &Waiting{Key: string(kv.Key), ModRev: kv.ModRevision, Notification: n}, true
}

// List is every waiting notification, oldest first.
func (o *View) List() []*Waiting {
	out := o.Values()
	slices.SortFunc(out, func(a, b *Waiting) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// ByJob counts the waiting notifications of each job.
func (o *View) ByJob() map[string]int {
	out := map[string]int{}
	o.Range(func(_ string, w *Waiting) bool {
		out[w.Record.Job]++
		return true
	})
	return out
}

// Backlog sums up what waits: how many notifications for each sink, and
// when the oldest of them was created (zero when none waits).
func (o *View) Backlog() (bySink map[string]int, oldest time.Time) {
	bySink = map[string]int{}
	o.Range(func(_ string, w *Waiting) bool {
		bySink[w.Sink]++
		if oldest.IsZero() || w.CreatedAt.Before(oldest) {
			oldest = w.CreatedAt
		}
		return true
	})
	return bySink, oldest
}
