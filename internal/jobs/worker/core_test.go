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
