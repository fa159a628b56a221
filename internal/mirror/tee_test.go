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
	put := func(key, value string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	put(testPrefix+"a", "1")
	a, b := &copyHandler{}, &copyHandler{}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(mctx, cli, testPrefix, Tee(a, b), nil) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
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
