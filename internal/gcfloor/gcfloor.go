// Package gcfloor gives the garbage collector a floor of headroom: a
// collection starts only once at least Headroom bytes were allocated since
// the last one, however small the live heap. GOGC=100 alone collects each
// time the heap doubles, so a replica with 20 MB live collected every 20 MB
// allocated, every two seconds at 1,000 runs a second, and collecting was a
// sixth of its CPU (docs/performance.md, "Profiling"). The floor sets the
// runtime's GC percent so that the heap goal is the live heap plus
// Headroom; once the live heap exceeds Headroom, GOGC=100's goal is the
// further one and the floor changes nothing, so a large config's memory
// (100,000 jobs) is bounded as before.
package gcfloor

import (
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/jonboulle/clockwork"
)

// Default is the headroom a replica keeps (docs/configuration.md#memory).
const Default = 64 << 20

const (
	minHeadroom = 1 << 20
	basePercent = 100 // GOGC's default, the floor's least
	// heapMinimum is the runtime's least heap goal at GOGC=100, which it
	// scales by the GC percent: a live heap below it counts as it, or a
	// tiny heap's percent would set that least goal far above the floor.
	heapMinimum = 4 << 20
)

// Runtime is what the floor reads from and sets in the Go runtime.
type Runtime interface {
	// Live is the heap marked live by the last collection and how many
	// collections ended so far.
	Live() (live, cycles uint64)
	// SetGCPercent sets the GC percent and returns the previous one
	// (debug.SetGCPercent).
	SetGCPercent(percent int) int
}

// Floor keeps the GC percent at Percent(live heap) after each collection.
type Floor struct {
	headroom uint64
	every    time.Duration
	clock    clockwork.Clock
	rt       Runtime
}

// New returns a floor of headroom bytes that looks for a finished
// collection every interval. rt nil is this process's runtime.
func New(headroom uint64, every time.Duration, clock clockwork.Clock, rt Runtime) (*Floor, error) {
	if headroom < minHeadroom {
		return nil, fmt.Errorf("gcfloor: headroom %d bytes: want at least %d", headroom, minHeadroom)
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

// Percent is the GC percent whose heap goal is live plus the headroom, or
// GOGC's default when its goal is further.
func (f *Floor) Percent(live uint64) int {
	live = max(live, heapMinimum)
	return int(max((f.headroom*100+live-1)/live, basePercent))
}

// Run sets the GC percent at once and after each collection until ctx
// ends, then puts back the percent it found.
func (f *Floor) Run(ctx context.Context) {
	live, seen := f.rt.Live()
	set := f.Percent(live)
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
		live, cycles := f.rt.Live()
		if cycles == seen {
			continue
		}
		seen = cycles
		if p := f.Percent(live); p != set {
			set = p
			f.rt.SetGCPercent(p)
		}
	}
}

// Process is this process's runtime.
func Process() Runtime { return processRuntime{} }

type processRuntime struct{}

func (processRuntime) Live() (uint64, uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return sampleUint(s[0]), sampleUint(s[1])
}

func (processRuntime) SetGCPercent(p int) int { return debug.SetGCPercent(p) }

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}
