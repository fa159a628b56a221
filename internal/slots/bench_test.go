package slots

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/session"
)

// benchSemaphore is a bench's etcd: a client, a running semaphore on it
// and a session with a TTL no bench outlasts between keepalives.
func benchSemaphore(b *testing.B) (*clientv3.Client, *Semaphore, *session.Session) {
	b.Helper()
	cli := etcdtest.Start(b).Client()
	return cli, startSemaphore(b, cli), newSession(b, cli, 10*time.Second, 2*time.Second)
}

// reportLatency adds round trips per second and latency percentiles to a
// benchmark's result.
// Rates come from the timed round trips alone, so setup inside the loop
// (the queue entry) does not count.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(float64(len(lat))/total.Seconds(), "roundtrips/s")
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkClaimRelease is one replica claiming a slot and releasing it, one
// run after the other, against one embedded member. Sixteen slots, so a
// view that has not yet seen the last release does not stall the next
// claim: that is the watch's latency, not the claim's.
func BenchmarkClaimRelease(b *testing.B) { benchClaimRelease(b, timeBoth) }

// What a claim-release loop times.
const (
	timeBoth = iota
	timeClaim
	timeRelease
)

func benchClaimRelease(b *testing.B, timed int) {
	_, sem, sess := benchSemaphore(b)
	ctx := b.Context()
	lat := make([]time.Duration, 0, 4096)
	n := 0
	for b.Loop() {
		t0 := time.Now()
		h, err := sem.Claim(ctx, sess, Request{Job: "bench", MaxConcurrency: 16, Value: Value{RunID: fmt.Sprintf("bench@%d", n)}})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := sem.Release(ctx, h); err != nil {
			b.Fatal(err)
		}
		switch timed {
		case timeBoth:
			lat = append(lat, time.Since(t0))
		case timeClaim:
			lat = append(lat, t1.Sub(t0))
		case timeRelease:
			lat = append(lat, time.Since(t1))
		}
		n++
	}
	reportLatency(b, lat)
}

// BenchmarkClaimReleaseWithResource adds a resource slot and a caller's
// queue entry, as the dispatch engine claims.
func BenchmarkClaimReleaseWithResource(b *testing.B) {
	cli, sem, sess := benchSemaphore(b)
	ctx := b.Context()
	lat := make([]time.Duration, 0, 4096)
	n := 0
	for b.Loop() {
		entry := fmt.Sprintf("%squeue/bench/bench@%d", testPrefix, n)
		read, err := cli.Put(ctx, entry, "pending")
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		h, err := sem.Claim(ctx, sess, Request{
			Job: "bench", MaxConcurrency: 16, Resources: []Resource{{"db", 16}},
			Value:   Value{RunID: fmt.Sprintf("bench@%d", n)},
			If:      []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entry), "=", read.Header.Revision)},
			ThenFor: func(slot int) []clientv3.Op { return []clientv3.Op{clientv3.OpPut(entry, runningOn(slot))} },
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := sem.Release(ctx, h, clientv3.OpPut(fmt.Sprintf("%sruns/bench/bench@%d", testPrefix, n), "{}"), clientv3.OpDelete(entry)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		n++
	}
	reportLatency(b, lat)
}

// BenchmarkRawTxn is the limit for BenchmarkClaimRelease: the same two
// transactions (create-if-absent with a lease, delete-if-owner) sent with the
// bare client on the same setup.
func BenchmarkRawTxn(b *testing.B) {
	cli := etcdtest.Start(b).Client()
	sess := newSession(b, cli, 10*time.Second, 2*time.Second)
	ctx := b.Context()
	key := testLayout.Slot("bench", 0)
	lat := make([]time.Duration, 0, 4096)
	for b.Loop() {
		t0 := time.Now()
		resp, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, `{"run_id":"bench@0"}`, clientv3.WithLease(sess.Lease()))).
			Commit()
		if err != nil || !resp.Succeeded {
			b.Fatal(err, resp.Succeeded)
		}
		del, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", resp.Header.Revision)).
			Then(clientv3.OpDelete(key)).
			Commit()
		if err != nil || !del.Succeeded {
			b.Fatal(err, del.Succeeded)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}
