package main

import (
	"strings"
	"testing"
	"time"
)

// With -pprof, -pprof-seconds is at least a second, at most the window (a
// profile longer than it would measure the grace and the next step) and
// within the fetch's timeout; without it, the flag's default does not
// refuse a window shorter than itself.
func TestPprofSecondsIsBoundedByTheWindow(t *testing.T) {
	lists := flagLists{jobs: "1", rates: "1", scaleJobs: "1", coreCounts: "1", burstJobs: "1", replicas: "3",
		leanRuns: "1", leanHistory: "0", leanSlots: "with", leanWatch: "without"}
	for _, tc := range []struct {
		seconds int
		window  time.Duration
		pprof   bool
		ok      bool
	}{{10, 20 * time.Second, true, true}, {20, 20 * time.Second, true, true}, {90, 90 * time.Second, true, true},
		{0, 20 * time.Second, true, false}, {21, 20 * time.Second, true, false}, {101, 120 * time.Second, true, false},
		{10, 5 * time.Second, false, true}} {
		f := flags{duration: tc.window, coresJobs: 1, pprof: tc.pprof, pprofSeconds: tc.seconds}
		f.burst.warmup, f.burst.maxParallel = 8*time.Second, 1
		err := lists.into(&f)
		if tc.ok != (err == nil) {
			t.Errorf("-pprof %v, -pprof-seconds %d with -duration %s: %v, want ok %v", tc.pprof, tc.seconds, tc.window, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "-pprof-seconds") {
			t.Errorf("-pprof-seconds %d: the error does not name the flag: %v", tc.seconds, err)
		}
	}
}
