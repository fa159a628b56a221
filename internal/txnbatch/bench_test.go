package txnbatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/embedetcd"
	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// BenchmarkClaims commits claim-shaped transactions from c concurrent
// callers (c = 1, 8, 64), through the committer (batched: its default of 4
// commits in flight; batched-inflight1: one) and as one etcd transaction
// each (raw), against one embedded member that fsyncs its WAL
// (fsync) or does not (nofsync, as the tests and test/bench run etcd).
// Each claim is what slots.Claim sends: the caller's compare of its queue
// entry, then a nested transaction that takes a free slot key under a
// lease and rewrites the 512-byte entry, reading the job's slots if the
// slot is taken. Every caller claims slots of its own job, so nothing
// conflicts.
//
//	go test -run '^$' -bench Claims ./internal/txnbatch
//
// Reported: claims/s, p50 and p99 latency of one claim, etcd revisions
// (raft entries that wrote) per claim, and the CPU time of the process (the
// member and the callers) per claim.
func BenchmarkClaims(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync"
		if !fsync {
			name = "nofsync"
		}
		b.Run(name, func(b *testing.B) {
			cli := benchEtcd(b, fsync)
			lease, err := cli.Grant(b.Context(), 600)
			if err != nil {
				b.Fatal(err)
			}
			for _, conc := range []int{1, 8, 64} {
				for _, mode := range []struct {
					name     string
					inFlight int // 0: raw
				}{{"batched", 4}, {"batched-inflight1", 1}, {"raw", 0}} {
					b.Run(fmt.Sprintf("%s/c=%d", mode.name, conc), func(b *testing.B) {
						benchClaims(b, cli, lease.ID, mode.inFlight, conc)
					})
				}
			}
		})
	}
}

func benchEtcd(b *testing.B, fsync bool) *clientv3.Client {
	if !fsync {
		return etcdtest.Start(b).Client()
	}
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	s, err := embedetcd.Start(ctx, embedetcd.Options{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return etcdtest.NewClient(b, s.Endpoints())
}

var benchRun atomic.Int64 // keeps each sub-benchmark's keys apart

func claimTxn(run int64, caller, n int, lease clientv3.LeaseID, entryValue string) Txn {
	job := fmt.Sprintf("j%d-%d", run, caller)
	entry := fmt.Sprintf("/bench/queue/%s/%s@%d", job, job, n)
	slot := fmt.Sprintf("/bench/slots/%s/%d", job, n)
	return Txn{
		If: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entry), "=", 0)},
		Then: []clientv3.Op{clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(slot), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(slot, `{"run_id":"`+entry+`"}`, clientv3.WithLease(lease)), clientv3.OpPut(entry, entryValue)},
			[]clientv3.Op{clientv3.OpGet("/bench/slots/"+job+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())},
		)},
	}
}

func benchClaims(b *testing.B, cli *clientv3.Client, lease clientv3.LeaseID, inFlight, conc int) {
	c, err := New(cli, Options{InFlight: inFlight})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	commit := func(ctx context.Context, t Txn) (*clientv3.TxnResponse, error) {
		if inFlight > 0 {
			return c.Commit(ctx, t)
		}
		return cli.Txn(ctx).If(t.If...).Then(t.Then...).Commit()
	}
	run := benchRun.Add(1)
	entryValue := strings.Repeat("x", 512)
	before, err := cli.Get(b.Context(), "/bench/none")
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime(b)
	start := time.Now()
	for g := range conc {
		wg.Go(func() {
			for {
				n := int(next.Add(1))
				if n > b.N {
					return
				}
				t0 := time.Now()
				resp, err := commit(b.Context(), claimTxn(run, g, n, lease, entryValue))
				if err != nil || !resp.Succeeded || !resp.Responses[0].GetResponseTxn().Succeeded {
					b.Errorf("claim: %v", err)
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	after, err := cli.Get(b.Context(), "/bench/none")
	if err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	at := func(q float64) float64 {
		return float64(all[min(len(all)-1, int(q*float64(len(all))))].Microseconds())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(after.Header.Revision-before.Header.Revision)/float64(b.N), "revs/claim")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/claim")
	b.ReportMetric(0, "ns/op")
}

// cpuTime is the process's user and system CPU time: the member and the
// callers together, which contention for the machine does not inflate the
// way it does latency and rates.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
