package election

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// backoff spaces out retries against an etcd that fails, so a replica does
// not spin while the cluster is unreachable.
type backoff struct {
	clock clockwork.Clock
	next  time.Duration
}

func newBackoff(clock clockwork.Clock) *backoff { return &backoff{clock: clock, next: minBackoff} }

func (b *backoff) reset() { b.next = minBackoff }

// wait returns after the current delay, when ctx ends, or when wake closes
// (a new session makes an immediate retry worthwhile).
func (b *backoff) wait(ctx context.Context, wake <-chan struct{}) {
	d := b.next
	b.next = min(2*b.next, maxBackoff)
	select {
	case <-ctx.Done():
	case <-wake:
	case <-b.clock.After(d):
	}
}
