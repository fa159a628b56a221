package worker

import (
	"sync"
	"testing"
)

// deep goes about n KB down the stack, as a run's target call and release
// do, in frames of a kilobyte.
//
//go:noinline
func deep(n int) byte {
	var b [1 << 10]byte
	if n <= 1 {
		return b[stackIndex%len(b)]
	}
	return deep(n-1) + b[(stackIndex+n)%len(b)]
}

// BenchmarkRunGoroutineStack starts goroutines that go 10 KB deep, as a
// run's does: growing the stack once at the start (growRunStack) against
// letting it double as the calls go down.
func BenchmarkRunGoroutineStack(b *testing.B) {
	for _, c := range []struct {
		name string
		grow bool
	}{{"doubling", false}, {"grown-at-start", true}} {
		b.Run(c.name, func(b *testing.B) {
			var wg sync.WaitGroup
			for b.Loop() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if c.grow {
						growRunStack()
					}
					deep(10)
				}()
				wg.Wait()
			}
		})
	}
}
