package main

import (
	"testing"
	"time"
)

// Each trace of `go tool pprof -traces` counts once, under the first
// category any of its frames matches: a release's gRPC send is the
// release's, a bare gRPC read the transport's.
func TestCategorizeAssignsEachTraceOnce(t *testing.T) {
	traces := `File: scheduler
Type: cpu
-----------+-------------------------------------------------------
      20ms   google.golang.org/grpc.(*clientStream).SendMsg
             github.com/etcdsched/scheduler/internal/slots.(*Semaphore).ReleaseIf
             github.com/etcdsched/scheduler/internal/jobs/worker.(*assignedRunner).runClaimed
-----------+-------------------------------------------------------
      1.5s   google.golang.org/grpc/internal/transport.(*http2Client).reader
-----------+-------------------------------------------------------
     500us   runtime.scanObject
             runtime.gcDrain
             runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
      10ms   runtime.memmove
`
	by, total := categorize(traces)
	want := map[string]time.Duration{
		"claims, starts, releases":     20 * time.Millisecond,
		"gRPC transport (etcd client)": 1500 * time.Millisecond,
		"garbage collection":           500 * time.Microsecond,
		otherCategory:                  10 * time.Millisecond,
	}
	if len(by) != len(want) {
		t.Errorf("categories %v, want %v", by, want)
	}
	for n, d := range want {
		if by[n] != d {
			t.Errorf("%s: %v, want %v", n, by[n], d)
		}
	}
	if total != 1530*time.Millisecond+500*time.Microsecond {
		t.Errorf("total %v", total)
	}
}
