package slots

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
)

// BenchmarkAdmission times the claim of a run (release untimed) with a job
// slot and a resource slot, and beside it the same claim with a place in a
// rate window too (one more compare and put in the transaction, and the
// view's judgement of the window's places). The run's start advances a
// whole period per claim, so every place is always free: it measures what
// a window costs, not waiting for one.
func BenchmarkAdmission(b *testing.B) {
	for _, tc := range []struct {
		name  string
		rates []Rate
	}{
		{"slots-only", nil},
		{"with-rate", []Rate{{Scope: keys.RateResource, Name: "db", Count: 100, Per: time.Second}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, sem, sess := benchSemaphore(b)
			ctx := b.Context()
			lat := make([]time.Duration, 0, 4096)
			start := time.Now()
			n := 0
			for b.Loop() {
				start = start.Add(2 * time.Second)
				t0 := time.Now()
				h, err := sem.Claim(ctx, sess, Request{
					Job: "bench", MaxConcurrency: 16, Resources: []Resource{{"db", 16}},
					Rates: tc.rates, Start: start,
					Value: Value{RunID: fmt.Sprintf("bench@%d", n)},
				})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				if err := sem.Release(ctx, h); err != nil {
					b.Fatal(err)
				}
				n++
			}
			reportLatency(b, lat)
		})
	}
}
