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

// A view behind Only follows its own keys of a wider watch, and is handed
// nothing for a response without any (copyHandler notes an empty Apply).
func TestOnlyFeedsAViewItsKeysOfAWiderWatch(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := putter(t, ctx, cli)
	put(testPrefix+"mine.1", "1")
	first := put(testPrefix+"other", "1")
	all, mine := &copyHandler{}, &copyHandler{}
	defer runMirror(t, ctx, cli, Tee(all, Only(testPrefix+"mine.", mine)))()
	// Read before what follows, so that mine's last revision is its event's.
	waitFor(t, all, first, map[string]string{testPrefix + "mine.1": "1", testPrefix + "other": "1"})
	put(testPrefix+"other", "2")
	rev := put(testPrefix+"mine.2", "2")
	last := put(testPrefix+"other", "3")
	waitFor(t, mine, rev, map[string]string{testPrefix + "mine.1": "1", testPrefix + "mine.2": "2"})
	waitFor(t, all, last, map[string]string{testPrefix + "mine.1": "1", testPrefix + "mine.2": "2", testPrefix + "other": "3"})
	mine.mu.Lock()
	defer mine.mu.Unlock()
	if mine.resets != 1 || len(mine.Wrong) > 0 || mine.Rev != rev {
		t.Errorf("resets %d (want 1), wrong %v, at revision %d (want %d: no later event was its)", mine.resets, mine.Wrong, mine.Rev, rev)
	}
}
