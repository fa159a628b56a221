package leader

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A job whose passes keep failing is looked at again later each time, up
// to passRetry.Max, and at once-soon again after a pass succeeds.
func TestFailedPassBacksOff(t *testing.T) {
	clock := clockwork.NewFakeClock()
	f := newPassFailures(clock)
	ms := time.Millisecond
	for i, step := range []time.Duration{500 * ms, time.Second, 2 * time.Second, 2 * time.Second} {
		wait := f.failed("a").Sub(clock.Now())
		if wait < step/2 || wait > step {
			t.Fatalf("failure %d: next look in %v, want in [%v, %v]", i+1, wait, step/2, step)
		}
	}
	if wait := f.failed("b").Sub(clock.Now()); wait > 500*ms {
		t.Fatalf("another job's first failure: next look in %v, want at most 500ms", wait)
	}
	f.passed("a") // what a pass that succeeds does (pass.go)
	if wait := f.failed("a").Sub(clock.Now()); wait > 500*ms {
		t.Fatalf("after a success: next look in %v, want at most 500ms", wait)
	}
}
