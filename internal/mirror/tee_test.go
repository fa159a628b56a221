package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// Two views of one prefix behind Tee follow it alike from one watch.
func TestTeeFeedsEveryViewFromOneWatch(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := putter(t, ctx, cli)
	put(testPrefix+"a", "1")
	a, b := &copyHandler{}, &copyHandler{}
	defer runMirror(t, ctx, cli, Tee(a, b))()
	rev := put(testPrefix+"b", "2")
	want := map[string]string{testPrefix + "a": "1", testPrefix + "b": "2"}
	waitFor(t, a, rev, want)
	waitFor(t, b, rev, want)
	for _, h := range []*copyHandler{a, b} {
		h.mu.Lock()
		if h.resets != 1 || len(h.Wrong) > 0 {
			t.Errorf("resets %d (want 1), wrong %v", h.resets, h.Wrong)
		}
		h.mu.Unlock()
	}
}
