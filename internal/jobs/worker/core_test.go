package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A waiter woken with no place free names no run (takePlaces): at twice
// the ceiling each freed place wakes every chunk waiting for one, and
// naming a chunk's 40 runs at each wake cost a replica more than running
// them.
func TestTakePlacesNamesOnlyTheRunsItTakes(t *testing.T) {
	c := newCore(validDeps(t, time.Now()), func() {})
	var named []int
	runs := 0
	id := func(i int) string {
		named = append(named, i)
		runs++
		return fmt.Sprintf("run-%d", runs)
	}
	for room := c.maxParallel(); room > 0; {
		named = nil
		want := min(room, maxChunk)
		n, _ := c.takePlaces(maxChunk, id)
		if n != want || len(named) != want {
			t.Fatalf("with %d places free: took %d, named %v; want %d taken and named", room, n, named, want)
		}
		room -= n
	}
	named = nil
	n, freed := c.takePlaces(maxChunk, id)
	if n != 0 || len(named) != 0 {
		t.Fatalf("with no place free: took %d, named %v; want none taken or named", n, named)
	}
	c.finish("run-1")
	select {
	case <-freed:
	default:
		t.Fatal("a place freed and the waiter's channel stayed open")
	}
	if n, _ := c.takePlaces(maxChunk, id); n != 1 || len(named) != 1 {
		t.Fatalf("with one place freed: took %d, named %v; want one", n, named)
	}
}

// A cancel request (from the cancels' watch) and the run registering its
// cancel func (from the run's goroutine) meet on the run's entry in
// active: each touches the func under the core's lock (go test -race
// finds the request's read otherwise, when it takes the lock first), and
// the run is cancelled whichever comes first.
func TestACancelRequestMeetsTheRunsStartUnderTheLock(t *testing.T) {
	c := newCore(validDeps(t, time.Now()), func() {})
	for i := range 200 {
		runID := fmt.Sprint("run-", i)
		if taken, _ := c.take(runID); !taken {
			t.Fatalf("%s: no place", runID)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); c.setCancel(runID, cancel) }()
		go func() { defer wg.Done(); c.cancelRequested(runID, "by the test") }()
		wg.Wait()
		c.cancelRequested(runID, "by the test")
		if ctx.Err() == nil {
			t.Fatalf("%s: not cancelled", runID)
		}
		c.finish(runID)
	}
}

// A run whose target has returned gives its place back while its end is
// written (in a burst at 1,000 jobs on 3 replicas, a replica's ends took
// etcd 100-160 ms to answer, and the runs of the same instant that had no
// place waited for them). It stays active meanwhile (busy: a retry waits
// for it; cancellable), and no more than endingBeyond runs may be ending
// before each takes a place again.
func TestAnEndingRunGivesItsPlaceBack(t *testing.T) {
	c := newCore(validDeps(t, time.Now()), func() {})
	limit := c.maxParallel()
	fill := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			if taken, _ := c.take(fmt.Sprint(prefix, i)); !taken {
				t.Fatalf("%s%d: no place with %d ending", prefix, i, c.ending)
			}
		}
		if !c.full() {
			t.Fatalf("%d runs of %s running: not full", n, prefix)
		}
	}
	fill("first-", limit)
	_, freed := c.takePlaces(1, func(int) string { return "waiter" })
	c.ended("first-0")
	select {
	case <-freed:
	default:
		t.Fatal("a run ended and the waiter's channel stayed open")
	}
	if !c.busy("first-0") {
		t.Error("a run whose end is being written is not busy")
	}
	if taken, _ := c.take("second-x"); !taken {
		t.Fatal("a place given back by an ending run could not be taken")
	}
	c.finish("second-x")
	beyond := endingBeyond(limit)
	for i := 1; i < beyond; i++ {
		c.ended(fmt.Sprint("first-", i))
	}
	c.ended("first-0") // twice: counted once
	fill("second-", beyond)
	// max_parallel running, endingBeyond of them ending: one more ending
	// frees nothing.
	c.ended(fmt.Sprint("first-", beyond))
	if !c.full() {
		t.Fatalf("%d ending and %d running: a place free", c.ending, len(c.active)-c.ending)
	}
	c.finish("first-0")
	if c.full() {
		t.Fatalf("an ending run finished (%d ending, %d active): still full", c.ending, len(c.active))
	}
}
