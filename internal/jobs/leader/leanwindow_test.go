package leader

import (
	"slices"
	"testing"
)

// A window goes to three workers at most, and the windows take turns over
// them: over as many windows as there are workers, each worker gets three.
// Up to three workers, each window goes to them all.
func TestLeanWindowsTakeTurnsOverTheWorkers(t *testing.T) {
	var l leader
	few := []string{"a", "b", "c"}
	if got := l.nextWindowWorkers(few); !slices.Equal(got, few) {
		t.Errorf("three workers: a window goes to %v, want all", got)
	}
	workers := []string{"a", "b", "c", "d", "e"}
	count := map[string]int{}
	for range len(workers) {
		got := l.nextWindowWorkers(workers)
		if len(got) != windowWorkers {
			t.Fatalf("a window goes to %v, want %d workers", got, windowWorkers)
		}
		for _, w := range got {
			count[w]++
		}
		if sorted := slices.Compact(slices.Sorted(slices.Values(got))); len(sorted) != len(got) {
			t.Errorf("a window goes to %v: a worker twice", got)
		}
	}
	for _, w := range workers {
		if count[w] != windowWorkers {
			t.Errorf("over %d windows %s got %d, want %d: %v", len(workers), w, count[w], windowWorkers, count)
		}
	}
}
