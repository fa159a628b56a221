package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// BenchmarkEntryLife is the etcd side of one run's entry and record, as an
// older version wrote them (inline: the spec in the entry, the record in
// full) and as this one does (lean): the tick's put of the pending entry,
// the claim's rewrite, the release's record put and entry delete, one
// transaction each, 16 runs at a time, with three watchers of queue/ (the
// replicas) receiving every event. It reports the CPU time of the process
// (the embedded member, the clients and the watchers) per run, and the
// bytes of values written per run. Slots, compares and the spec's own
// write (once per version) are left out: they are the same either way.
//
//	go test -run XXX -bench EntryLife -benchtime 20000x -count 3 ./internal/jobs/queue/
func BenchmarkEntryLife(b *testing.B) {
	etcd := etcdtest.Start(b)
	cfg := benchConfig(b)
	job := &cfg.Jobs[0]
	for _, form := range []string{"inline", "lean"} {
		b.Run(form, func(b *testing.B) {
			k := keys.New(fmt.Sprintf("/life-%s-%d/", form, b.N))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var events atomic.Int64
			for range 3 {
				w := etcdtest.NewClient(b, etcd.Endpoints()).Watch(ctx, k.Queue(), clientv3.WithPrefix())
				go func() {
					for resp := range w {
						events.Add(int64(len(resp.Events)))
					}
				}()
			}
			cli := etcdtest.NewClient(b, etcd.Endpoints())
			t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
			var bytes atomic.Int64
			life := func(i int) error {
				at := t0.Add(time.Duration(i) * time.Second)
				e := NewEntry(runs.ID(job.Name, at), job, nil, at, at.Add(345678912), 1, runs.Schedule)
				running := e.Running("replica-2", 1, at)
				rec := running.Finished(runs.Succeeded, 1, 123456, at, at.Add(2*time.Millisecond))
				rec.HTTPStatus = 200
				var stored string
				if form == "inline" {
					e.SpecRef, running.SpecRef = "", ""
					full, _ := json.Marshal(&rec)
					stored = string(full)
				} else {
					stored = EncodeRecord(&rec)
				}
				key := k.Entry(job.Name, e.RunID)
				pending, claimed := e.Encode(), running.Encode()
				bytes.Add(int64(len(pending) + len(claimed) + len(stored)))
				for _, ops := range [][]clientv3.Op{
					{clientv3.OpPut(key, pending)},
					{clientv3.OpPut(key, claimed)},
					{clientv3.OpPut(k.Record(job.Name, e.RunID), stored), clientv3.OpDelete(key)},
				} {
					if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
						return err
					}
				}
				return nil
			}
			var before syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						if err := life(i); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			poll.For(b, time.Minute, "every watcher's events", func() bool { return events.Load() >= int64(9*b.N) })
			b.StopTimer()
			var after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
			b.ReportMetric(float64(bytes.Load())/float64(b.N), "value-B/run")
		})
	}
}
