// Package gcfloor gives the garbage collector a floor of headroom: the heap
// goal is at least Headroom bytes above what the last collection left
// live, however small the live heap. GOGC=100 alone collects each time the
// heap doubles, so a replica with 20 MB live collected every 20 MB
// allocated, every two seconds at 1,000 runs a second, and collecting was a
// sixth of its CPU (docs/performance.md#rules-the-figures-set). The floor
// sets the runtime's GC percent so that the goal is the live heap plus
// Headroom; once the live heap and its roots exceed Headroom, GOGC=100's
// goal is the further one and the floor changes nothing, so a large
// config's memory (100,000 jobs) is bounded as before once its heap has
// been collected (Every says what a jump of the live heap may cost first).
package gcfloor

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/jonboulle/clockwork"
)

// Default is the headroom a replica keeps (deploy/README.md#memory).
const Default = 64 << 20

// Every is how often a replica's floor looks for a finished collection:
// until it does, the goal the runtime set at that collection's end stands,
// made with the percent of the collection before (a jump of the live heap
// from 2 to 60 MiB at a percent set for 2 MiB made a goal of 1 GiB), so
// the heap can outgrow the floor by what is allocated in that time.
const Every = 50 * time.Millisecond

const (
	minHeadroom = 1 << 20
	maxHeadroom = 1 << 40
	basePercent = 100 // GOGC's default, the floor's least
	// heapMinimum is the runtime's least heap goal at GOGC=100, which it
	// scales by the GC percent: less to scan counts as it, or a tiny
	// heap's percent would set that least goal far above the floor.
	heapMinimum = 4 << 20
)

// Heap is what the last collection found.
type Heap struct {
	Live   uint64 // heap bytes marked live
	Roots  uint64 // goroutine stacks and globals scanned
	Cycles uint64 // collections ended so far
}

// Runtime is what the floor reads from and sets in the Go runtime.
type Runtime interface {
	Heap() Heap
	// SetGCPercent sets the GC percent and returns the previous one
	// (debug.SetGCPercent).
	SetGCPercent(percent int) int
}

// Floor keeps the GC percent at Percent(heap) after each collection.
type Floor struct {
	headroom uint64
	every    time.Duration
	clock    clockwork.Clock
	rt       Runtime
}

// New returns a floor of headroom bytes that looks for a finished
// collection every interval. rt nil is this process's runtime.
func New(headroom uint64, every time.Duration, clock clockwork.Clock, rt Runtime) (*Floor, error) {
	if headroom < minHeadroom || headroom > maxHeadroom {
		return nil, fmt.Errorf("gcfloor: headroom %d bytes: want %d to %d", headroom, uint64(minHeadroom), uint64(maxHeadroom))
	}
	if every <= 0 {
		return nil, fmt.Errorf("gcfloor: interval %s: want more than 0", every)
	}
	if clock == nil {
		return nil, fmt.Errorf("gcfloor: no clock")
	}
	if rt == nil {
		rt = Process()
	}
	return &Floor{headroom: headroom, every: every, clock: clock, rt: rt}, nil
}

// Percent is the GC percent whose heap goal is the live heap plus the
// headroom, or GOGC's default when its goal is further. The runtime's goal
// is live + (live + roots) × percent / 100, and at least its minimum heap
// scaled by the percent.
func (f *Floor) Percent(h Heap) int {
	scanned := max(h.Live+h.Roots, heapMinimum)
	return int(max((f.headroom*100+scanned-1)/scanned, basePercent))
}

// Run sets the GC percent at once and after each collection until ctx
// ends, then puts back the percent it found.
func (f *Floor) Run(ctx context.Context) {
	h := f.rt.Heap()
	set, seen := f.Percent(h), h.Cycles
	before := f.rt.SetGCPercent(set)
	defer f.rt.SetGCPercent(before)
	t := f.clock.NewTicker(f.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		h := f.rt.Heap()
		if h.Cycles == seen {
			continue
		}
		seen = h.Cycles
		if p := f.Percent(h); p != set {
			set = p
			f.rt.SetGCPercent(p)
		}
	}
}

// Process is this process's runtime.
func Process() Runtime { return processRuntime{} }

type processRuntime struct{}

func (processRuntime) Heap() Heap {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"}, {Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	return Heap{Live: sampleUint(s[0]), Roots: sampleUint(s[1]) + sampleUint(s[2]), Cycles: sampleUint(s[3])}
}

func (processRuntime) SetGCPercent(p int) int { return debug.SetGCPercent(p) }

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}
