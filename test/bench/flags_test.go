package main

import (
	"strings"
	"testing"
	"time"
)

// -pprof-seconds is at least a second, at most the window (a profile
// longer than it would measure the grace and the next step) and within
// the fetch's timeout.
func TestPprofSecondsIsBoundedByTheWindow(t *testing.T) {
	lists := flagLists{jobs: "1", rates: "1", scaleJobs: "1", coreCounts: "1", burstJobs: "1", replicas: "3",
		leanRuns: "1", leanHistory: "0", leanSlots: "with", leanWatch: "without"}
	for _, tc := range []struct {
		seconds int
		window  time.Duration
		ok      bool
	}{{10, 20 * time.Second, true}, {20, 20 * time.Second, true}, {90, 90 * time.Second, true},
		{0, 20 * time.Second, false}, {21, 20 * time.Second, false}, {101, 120 * time.Second, false}} {
		f := flags{duration: tc.window, coresJobs: 1, pprofSeconds: tc.seconds}
		f.burst.warmup, f.burst.maxParallel = 8*time.Second, 1
		err := lists.into(&f)
		if tc.ok != (err == nil) {
			t.Errorf("-pprof-seconds %d with -duration %s: %v, want ok %v", tc.seconds, tc.window, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "-pprof-seconds") {
			t.Errorf("-pprof-seconds %d: the error does not name the flag: %v", tc.seconds, err)
		}
	}
}
