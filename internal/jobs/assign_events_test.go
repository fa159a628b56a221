package jobs_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A replica decodes each change of its own assignments once: they come on
// the one watch of assign/ its take-over view keeps, not on a second watch
// of its own as well (which cost it every event of its assignments twice).
// A witness's watch of assign/ from the first revision counts every change;
// alone, the replica's assignments are all of them, so once the witness
// has seen every revision up to after the replica's count was read, the
// replica cannot have decoded more; nor, its watch begun before the
// first assignment, much fewer. (Counted over a window from a moment
// both agreed on, a replica whose watch was still catching up decoded 42
// for the witness's 30 and failed in one run in six.)
func TestAReplicaDecodesItsAssignmentsOnce(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("tick", "@every 1s", w.url("")))
	reg := prometheus.NewRegistry()
	a := etcd.nodeWith("a", cfg, timing{Reg: reg, CountEvents: true})
	leaderOf(t, []*node{a})

	var witnessed, seenRev atomic.Int64
	ctx := t.Context()
	cli := etcd.Client()
	done := make(chan struct{})
	t.Cleanup(func() { <-done }) // t.Context ends before cleanups: the watch closes
	watch := cli.Watch(clientv3.WithRequireLeader(ctx), keys.New(testPrefix).Assignments(), clientv3.WithPrefix(), clientv3.WithRev(1), clientv3.WithProgressNotify())
	go func() {
		defer close(done)
		for resp := range watch {
			witnessed.Add(int64(len(resp.Events)))
			seenRev.Store(resp.Header.Revision)
		}
	}()
	decoded := func() float64 {
		return metric(t, reg, "scheduler_watch_events_total", map[string]string{"kind": "assign"})
	}
	poll.Until(t, 90*time.Second, "30 events of assignments decoded", func() (bool, string) {
		return decoded() >= 30, fmt.Sprint(decoded(), " decoded")
	})
	dd := decoded()
	now, err := cli.Get(ctx, "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the witness to see every revision to the count's", func() (bool, string) {
		_ = cli.RequestProgress(ctx)
		return seenRev.Load() >= now.Header.Revision, fmt.Sprint("at ", seenRev.Load(), " of ", now.Header.Revision)
	})
	dw := float64(witnessed.Load())
	t.Logf("decoded %.0f events of assignments; they changed %.0f times", dd, dw)
	if dd > dw || dd < dw*0.75-3 {
		t.Errorf("the replica decoded %.0f events of assignments while they changed %.0f times; want each once", dd, dw)
	}
}
