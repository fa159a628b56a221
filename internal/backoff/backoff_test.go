package backoff

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// The delays the call sites rely on: doubling from Min, held at Max, and
// back to Min after Reset.
func TestSequence(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		p       Policy
		resetAt int // Reset before this step; 0: never
		want    []time.Duration
	}{
		{"slots and mirror", Policy{Min: 50 * ms, Max: 2 * time.Second}, 0,
			[]time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2 * time.Second, 2 * time.Second}},
		{"election", Policy{Min: 100 * ms, Max: 2 * time.Second}, 0,
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2 * time.Second}},
		{"session, capped by a TTL that is no power-of-two step", Policy{Min: 100 * ms, Max: 5 * time.Second}, 0,
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5 * time.Second, 5 * time.Second}},
		{"reset starts over", Policy{Min: 50 * ms, Max: 2 * time.Second}, 3,
			[]time.Duration{50 * ms, 100 * ms, 200 * ms, 50 * ms, 100 * ms}},
		{"max below min is max", Policy{Min: time.Second, Max: 300 * ms}, 0,
			[]time.Duration{300 * ms, 300 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.p.Start()
			for i, want := range tc.want {
				if i == tc.resetAt && i > 0 {
					b.Reset()
				}
				if d := b.Delay(); d != want {
					t.Fatalf("step %d: Delay = %v, want %v", i, d, want)
				}
				if d := b.Next(); d != want {
					t.Fatalf("step %d: Next = %v, want %v", i, d, want)
				}
			}
		})
	}
}

// Wait waits the delay on the injected clock and no longer.
func TestWaitReturnsAfterTheDelay(t *testing.T) {
	clock := clockwork.NewFakeClock()
	b := Policy{Min: time.Second, Max: time.Minute}.Start()
	done := waitAsync(t.Context(), &b, clock, nil)
	blockUntilWaiting(t, clock)
	clock.Advance(999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Wait returned before its delay")
	default:
	}
	clock.Advance(time.Millisecond)
	if !receive(t, done, "Wait to return after its delay") {
		t.Fatal("Wait = false after its delay, want true")
	}
	if d := b.Delay(); d != 2*time.Second {
		t.Fatalf("after one Wait, Delay = %v, want 2s", d)
	}
}

// A cancelled ctx ends Wait at once, with false, however long the delay.
func TestWaitReturnsOnCancel(t *testing.T) {
	clock := clockwork.NewFakeClock()
	b := Policy{Min: time.Hour, Max: time.Hour}.Start()
	ctx, cancel := context.WithCancel(t.Context())
	done := waitAsync(ctx, &b, clock, nil)
	blockUntilWaiting(t, clock)
	cancel()
	if receive(t, done, "Wait to return on cancel") {
		t.Fatal("Wait = true after ctx was cancelled, want false")
	}
	if b.Wait(ctx, clock) {
		t.Fatal("Wait on an ended ctx = true, want false")
	}
}

// WaitOr returns true as soon as wake closes.
func TestWaitOrReturnsOnWake(t *testing.T) {
	clock := clockwork.NewFakeClock()
	b := Policy{Min: time.Hour, Max: time.Hour}.Start()
	wake := make(chan struct{})
	done := waitAsync(t.Context(), &b, clock, wake)
	blockUntilWaiting(t, clock)
	close(wake)
	if !receive(t, done, "WaitOr to return on wake") {
		t.Fatal("WaitOr = false on wake, want true")
	}
}

func waitAsync(ctx context.Context, b *Backoff, clock clockwork.Clock, wake <-chan struct{}) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- b.WaitOr(ctx, clock, wake) }()
	return done
}

func blockUntilWaiting(t *testing.T, clock *clockwork.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("Wait never set its timer: %v", err)
	}
}

func receive(t *testing.T, done <-chan bool, what string) bool {
	t.Helper()
	select {
	case ok := <-done:
		return ok
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
		return false
	}
}
