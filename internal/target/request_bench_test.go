package target

import (
	"context"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// BenchmarkNewRequest builds a traced run's request, as every HTTP run
// does: its allocations are a run's share of a replica's garbage.
func BenchmarkNewRequest(b *testing.B) {
	spec := &config.HTTP{Method: "GET", URL: "http://127.0.0.1:8080/tick"}
	run := Run{Job: "job-0001", RunID: "job-0001@2026-12-04T01:00:00Z", Attempt: 1,
		ScheduledAt: time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC), Slot: 0, FencingToken: 123456,
		Holder: "replica-1", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newRequest(ctx, spec, run); err != nil {
			b.Fatal(err)
		}
	}
}
