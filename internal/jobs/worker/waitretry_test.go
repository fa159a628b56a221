package worker

import (
	"testing"
	"time"
)

// A waiting run that etcd keeps failing tries again later each time, up to
// startRetry.Max; no try is later than the fixed second it used to wait at
// first.
func TestWaitingRunBacksOff(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var st waitState
	for i, step := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		wait := st.failed(now).Sub(now)
		if wait < step/2 || wait > step {
			t.Fatalf("failure %d: next try in %v, want in [%v, %v]", i+1, wait, step/2, step)
		}
	}
}
