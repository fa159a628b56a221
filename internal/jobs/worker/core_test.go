package worker

import (
	"fmt"
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
