// Package backoff spaces out retries: against an etcd that fails, so a
// replica does not spin while the cluster is unreachable or leaderless and
// comes back quickly once it answers again, and against a sink or a job's
// target. It is the one implementation of a doubling delay in the tree; each
// caller names its Policy where it chooses the numbers.
package backoff

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"
)

// Policy is how a retry loop spaces its attempts: Min before the first
// retry, doubled for each next one up to Max, each delay then shortened by
// a random part of up to Jitter of it. Jitter keeps replicas that failed
// together (an etcd leader election, a partition healing) from retrying in
// lockstep; it only ever shortens a delay, so Max stays a true bound. A
// Policy with Jitter 0 gives exact delays (a job's retries.backoff, whose
// delays are documented). A Max below Min is Max.
type Policy struct {
	Min, Max time.Duration
	// Jitter is the fraction of each delay that is random, in [0, 1].
	Jitter float64
}

// Validate reports a policy no loop can use, naming the setting.
func (p Policy) Validate() error {
	switch {
	case p.Min <= 0:
		return fmt.Errorf("backoff: Min must be positive, got %v", p.Min)
	case p.Max < p.Min:
		return fmt.Errorf("backoff: Max must not be less than Min (%v), got %v", p.Min, p.Max)
	case p.Jitter < 0 || p.Jitter > 1:
		return fmt.Errorf("backoff: Jitter must be in [0, 1], got %v", p.Jitter)
	}
	return nil
}

// Step is the delay before retry n (1 for the first) without its jitter:
// the longest it can be. It is a pure function of n.
func (p Policy) Step(n int) time.Duration {
	d := p.Min
	for i := 1; i < n && d > 0 && d < p.Max && d <= math.MaxInt64/2; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Delay is the delay before retry n with its jitter drawn: in
// [Step(n)*(1-Jitter), Step(n)].
func (p Policy) Delay(n int) time.Duration {
	d := p.Step(n)
	if p.Jitter <= 0 || d <= 0 {
		return d
	}
	return d - time.Duration(rand.Float64()*min(p.Jitter, 1)*float64(d))
}

// Start returns a retry loop's backoff at its first step.
func (p Policy) Start() Backoff { return Backoff{policy: p} }

// Backoff is where one retry loop stands in its Policy. Copying one copies
// the policy and the step. It is not safe for concurrent use: each retry
// loop owns its own.
type Backoff struct {
	policy Policy
	n      int // delays taken since the start or the last Reset
	// next is the next delay once drawn, so a log of Delay tells the
	// wait that follows.
	next  time.Duration
	drawn bool
}

// Delay is what the next Wait waits (its jitter drawn), without moving on.
func (b *Backoff) Delay() time.Duration {
	if !b.drawn {
		b.next, b.drawn = b.policy.Delay(b.n+1), true
	}
	return b.next
}

// Next returns the delay to wait now and moves to the next step.
func (b *Backoff) Next() time.Duration {
	d := b.Delay()
	b.n++
	b.drawn = false
	return d
}

// Reset goes back to the first step, after an attempt that succeeded.
func (b *Backoff) Reset() { b.n, b.drawn = 0, false }

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
	return SleepOr(ctx, clock, b.Next(), wake)
}

// SleepOr waits d on clock, cut short, returning true, when wake closes; it
// returns false when ctx ended first. A nil wake never fires.
func SleepOr(ctx context.Context, clock clockwork.Clock, d time.Duration, wake <-chan struct{}) bool {
	t := clock.NewTimer(d)
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
