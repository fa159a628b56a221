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
// A witness's watch of assign/ counts the changes; alone, the replica's
// assignments are all of them.
func TestAReplicaDecodesItsAssignmentsOnce(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("tick", "@every 1s", w.url("")))
	reg := prometheus.NewRegistry()
	a := etcd.nodeWith("a", cfg, timing{Reg: reg, CountEvents: true})
	leaderOf(t, []*node{a})

	var witnessed atomic.Int64
	ctx := t.Context()
	cli := etcd.Client()
	done := make(chan struct{})
	t.Cleanup(func() { <-done }) // t.Context ends before cleanups: the watch closes
	go func() {
		defer close(done)
		for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), keys.New(testPrefix).Assignments(), clientv3.WithPrefix()) {
			witnessed.Add(int64(len(resp.Events)))
		}
	}()
	decoded := func() float64 {
		return metric(t, reg, "scheduler_watch_events_total", map[string]string{"kind": "assign"})
	}
	poll.Until(t, 60*time.Second, "the witness to see assignments change", func() (bool, string) {
		return witnessed.Load() >= 4, fmt.Sprint(witnessed.Load(), " changes")
	})
	d0, w0 := decoded(), witnessed.Load()
	poll.Until(t, 60*time.Second, "30 more changes of assignments", func() (bool, string) {
		return witnessed.Load() >= w0+30, fmt.Sprint(witnessed.Load()-w0, " changes")
	})
	// A change in flight to one of the two at either end of the window
	// counts on one side only: a few events of slack, not a factor.
	dd, dw := decoded()-d0, float64(witnessed.Load()-w0)
	if dd > dw*1.25+3 || dd < dw*0.75-3 {
		t.Errorf("the replica decoded %.0f events of assignments while they changed %.0f times; want each once", dd, dw)
	}
}
