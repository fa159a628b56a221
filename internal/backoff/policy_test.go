package backoff

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Step is the documented doubling, exact: a job's retries.backoff relies on
// it (1s, 2s, 4s, ... held at max_backoff), including a zero Min (no
// backoff) and a Max that no doubling reaches exactly.
func TestStep(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"first retry waits Min", Policy{Min: s, Max: time.Minute}, 1, s},
		{"second doubles", Policy{Min: s, Max: time.Minute}, 2, 2 * s},
		{"sixth is 32s", Policy{Min: s, Max: time.Minute}, 6, 32 * s},
		{"seventh is held at Max", Policy{Min: s, Max: time.Minute}, 7, time.Minute},
		{"far past Max stays Max", Policy{Min: s, Max: time.Minute}, 1000, time.Minute},
		{"zero Min stays zero", Policy{Min: 0, Max: time.Minute}, 5, 0},
		{"n below 1 is the first step", Policy{Min: s, Max: time.Minute}, 0, s},
		{"no overflow below a huge Max", Policy{Min: s, Max: math.MaxInt64}, 100, time.Duration(s) << 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Step(tc.n); got != tc.want {
				t.Fatalf("Step(%d) = %v, want %v", tc.n, got, tc.want)
			}
			if got := tc.p.Delay(tc.n); got != tc.want {
				t.Fatalf("Delay(%d) without jitter = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

// Jitter shortens each delay by a random part of up to Jitter of it: never
// longer than the step (Max stays a bound), never shorter than
// step*(1-Jitter), and actually spread, so replicas do not retry together.
func TestJitterRange(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}
	for n := 1; n <= 7; n++ {
		step := p.Step(n)
		low := step - step/2
		lo, hi := step, time.Duration(0)
		for range 1000 {
			d := p.Delay(n)
			if d < low || d > step {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", n, d, low, step)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// 1000 uniform draws cover both quarters of the range.
		if lo > low+step/8 || hi < step-step/8 {
			t.Fatalf("Delay(%d) drew only [%v, %v] of [%v, %v]: not spread", n, lo, hi, low, step)
		}
	}
	// A loop's Backoff waits what Delay announced (a log of it is true),
	// within its step; Reset starts from Min again.
	b := p.Start()
	for n := 1; n <= 10; n++ {
		step, announced := p.Step(n), b.Delay()
		if d := b.Next(); d != announced || d < step-step/2 || d > step {
			t.Fatalf("step %d: Next = %v after Delay = %v, want that, in [%v, %v]", n, d, announced, step-step/2, step)
		}
	}
	b.Reset()
	if d := b.Delay(); d < p.Min/2 || d > p.Min {
		t.Fatalf("after Reset, Delay = %v, want in [%v, %v]", d, p.Min/2, p.Min)
	}
}

// Full jitter may wait not at all; a Jitter past 1 is clamped there.
func TestFullJitterIsNeverNegative(t *testing.T) {
	p := Policy{Min: time.Second, Max: time.Second, Jitter: 3}
	for range 1000 {
		if d := p.Delay(1); d < 0 || d > time.Second {
			t.Fatalf("Delay = %v, want in [0, 1s]", d)
		}
	}
}

// Validate names the setting and quotes the value.
func TestValidate(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{Min: 50 * ms, Max: 2 * time.Second, Jitter: 0.5}, ""},
		{Policy{Min: 0, Max: time.Second}, "backoff: Min must be positive, got 0s"},
		{Policy{Min: -ms, Max: time.Second}, "backoff: Min must be positive, got -1ms"},
		{Policy{Min: time.Second, Max: ms}, "backoff: Max must not be less than Min (1s), got 1ms"},
		{Policy{Min: ms, Max: ms, Jitter: -0.1}, "backoff: Jitter must be in [0, 1], got -0.1"},
		{Policy{Min: ms, Max: ms, Jitter: 1.5}, "backoff: Jitter must be in [0, 1], got 1.5"},
	} {
		err := tc.p.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: Validate = %v, want nil", tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: Validate = %v, want %q", tc.p, err, tc.want)
		}
	}
}
