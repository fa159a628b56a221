// Package backoff spaces out retries against an etcd that fails, so a
// replica does not spin while the cluster is unreachable or leaderless, and
// comes back quickly once it answers again.
package backoff

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Backoff is a doubling delay from Min up to Max. The zero value of its
// state starts at Min, so a literal Backoff{Min: ..., Max: ...} is ready to
// use; copying one copies its policy and where it stands. It is not safe for
// concurrent use: each retry loop owns its own.
type Backoff struct {
	Min, Max time.Duration

	next time.Duration // 0: Min
}

// Delay is what the next Wait waits, without moving on.
func (b *Backoff) Delay() time.Duration {
	d := b.next
	if d == 0 {
		d = b.Min
	}
	return min(d, b.Max)
}

// Next returns the delay to wait now and doubles the one after, up to Max.
func (b *Backoff) Next() time.Duration {
	d := b.Delay()
	b.next = min(2*d, b.Max)
	return d
}

// Reset goes back to Min, after an attempt that succeeded.
func (b *Backoff) Reset() { b.next = 0 }

// Wait waits the next delay on clock. It returns false when ctx ended first,
// so a loop can stop without sleeping out the delay.
func (b *Backoff) Wait(ctx context.Context, clock clockwork.Clock) bool {
	return b.WaitOr(ctx, clock, nil)
}

// WaitOr is Wait cut short, returning true, when wake closes: for example a
// new session, which makes an immediate retry worthwhile. A nil wake never
// fires.
func (b *Backoff) WaitOr(ctx context.Context, clock clockwork.Clock, wake <-chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	t := clock.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return true
	case <-t.Chan():
		return true
	}
}
