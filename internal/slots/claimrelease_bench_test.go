package slots

import (
	"github.com/etcdsched/scheduler/internal/etcdtest"

	"fmt"
	"testing"
	"time"
)

// BenchmarkClaim and BenchmarkRelease time each half of
// BenchmarkClaimRelease alone (the other half runs untimed), as the
// worker's claim at due-25ms and its release at the end of a run.
func BenchmarkClaim(b *testing.B)   { benchHalf(b, true) }
func BenchmarkRelease(b *testing.B) { benchHalf(b, false) }

func benchHalf(b *testing.B, claim bool) {
	cluster := etcdtest.Start(b)
	cli := cluster.Client()
	sem := startSemaphore(b, cli)
	sess := newSession(b, cli, 10*time.Second, 2*time.Second)
	ctx := b.Context()
	lat := make([]time.Duration, 0, 4096)
	n := 0
	for b.Loop() {
		t0 := time.Now()
		h, err := sem.Claim(ctx, sess, Request{Job: "bench", MaxConcurrency: 16, Value: Value{RunID: fmt.Sprintf("bench@%d", n)}})
		if err != nil {
			b.Fatal(err)
		}
		if claim {
			lat = append(lat, time.Since(t0))
		}
		t1 := time.Now()
		if err := sem.Release(ctx, h); err != nil {
			b.Fatal(err)
		}
		if !claim {
			lat = append(lat, time.Since(t1))
		}
		n++
	}
	reportLatency(b, lat)
}
