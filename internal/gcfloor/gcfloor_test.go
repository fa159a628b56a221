package gcfloor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

// The heap goal a percent gives (the runtime's: live + (live + roots) ×
// percent/100, at least its minimum heap scaled by the percent) is the live
// heap plus the headroom, to within a percent of what is scanned, or GOGC's
// default goal when that is more; below the runtime's minimum heap it is
// the headroom and at most that minimum more.
func TestPercentMakesTheGoalTheLiveHeapPlusTheHeadroom(t *testing.T) {
	f, err := New(64*mib, time.Second, clockwork.NewFakeClock(), &fakeRuntime{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		live, roots uint64
		percent     int
	}{
		{0, 0, 1600}, {1 * mib, 0, 1600}, {4 * mib, 0, 1600}, {20 * mib, 0, 320}, {30 * mib, 0, 214},
		{16 * mib, 16 * mib, 200}, {20 * mib, 12 * mib, 200},
		{64 * mib, 0, 100}, {100 * mib, 0, 100}, {2048 * mib, 0, 100},
	} {
		p := f.Percent(Heap{Live: c.live, Roots: c.roots})
		if p != c.percent {
			t.Errorf("Percent(live %d MiB, roots %d MiB) = %d, want %d", c.live/mib, c.roots/mib, p, c.percent)
		}
		scanned := c.live + c.roots
		goal := max(c.live+scanned*uint64(p)/100, heapMinimum*uint64(p)/100)
		lo := max(c.live+64*mib, c.live+scanned)
		hi := lo + scanned/100
		if scanned < heapMinimum { // the runtime's least goal, scaled by the percent, decides
			lo, hi = 64*mib, heapMinimum+64*mib
		}
		if goal < lo || goal > hi {
			t.Errorf("live %d MiB, roots %d MiB: goal %d MiB, want %d to %d MiB", c.live/mib, c.roots/mib, goal/mib, lo/mib, hi/mib)
		}
	}
}

func TestNewSaysWhichSettingIsWrong(t *testing.T) {
	clock := clockwork.NewFakeClock()
	for _, c := range []struct {
		headroom uint64
		every    time.Duration
		clock    clockwork.Clock
		want     string
	}{
		{0, time.Second, clock, "headroom 0 bytes"},
		{1 << 50, time.Second, clock, "headroom 1125899906842624 bytes"},
		{64 * mib, 0, clock, "interval 0s"},
		{64 * mib, time.Second, nil, "no clock"},
	} {
		_, err := New(c.headroom, c.every, c.clock, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %s): %v, want an error saying %q", c.headroom, c.every, err, c.want)
		}
	}
}

// Run sets the percent for the heap at once and again after each
// collection (not on a heap read between two), and puts back the percent
// it found when it stops.
func TestRunSetsThePercentAfterEachCollection(t *testing.T) {
	clock := clockwork.NewFakeClock()
	rt := &fakeRuntime{percent: 100, heap: Heap{Live: 20 * mib, Cycles: 3}}
	f, err := New(64*mib, time.Second, clock, rt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	rt.await(t, 1, []int{320})

	rt.collected(40*mib, false) // read between collections: kept
	tick(t, ctx, clock, rt, 2)
	rt.await(t, 2, []int{320})
	rt.collected(32*mib, true)
	tick(t, ctx, clock, rt, 3)
	rt.await(t, 3, []int{320, 200})
	rt.collected(100*mib, true)
	tick(t, ctx, clock, rt, 4)
	rt.await(t, 4, []int{320, 200, 100})

	cancel()
	<-done
	rt.await(t, 4, []int{320, 200, 100, 100})
	if rt.percent != 100 {
		t.Errorf("after Run: percent %d, want the 100 it found", rt.percent)
	}
}

// tick advances clock by Run's interval once Run waits on its ticker,
// having read the heap reads times.
func tick(t *testing.T, ctx context.Context, clock *clockwork.FakeClock, rt *fakeRuntime, reads int) {
	t.Helper()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	poll.Until(t, 10*time.Second, "Run's read of the heap", func() (bool, string) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.reads >= reads, fmt.Sprintf("%d reads, want %d", rt.reads, reads)
	})
}

// In this process: the runtime's own percent follows its heap.
func TestRunSetsThePercentOfThisProcess(t *testing.T) {
	f, err := New(64*mib, 5*time.Millisecond, clockwork.NewRealClock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := gogc()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	runtime.GC()
	poll.Until(t, 10*time.Second, "the process's GC percent for its heap", func() (bool, string) {
		h := Process().Heap()
		want := f.Percent(h)
		return gogc() == want && want > 100, fmt.Sprintf("percent %d, want %d (%+v)", gogc(), want, h)
	})
	cancel()
	<-done
	if p := gogc(); p != found {
		t.Errorf("after Run: percent %d, want the %d it found", p, found)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

type fakeRuntime struct {
	mu      sync.Mutex
	heap    Heap
	reads   int
	percent int
	sets    []int
}

func (r *fakeRuntime) Heap() Heap {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	return r.heap
}

func (r *fakeRuntime) SetGCPercent(p int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.percent
	r.percent = p
	r.sets = append(r.sets, p)
	return old
}

// collected changes the live heap, as a collection ends (cycle) or not.
func (r *fakeRuntime) collected(live uint64, cycle bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heap.Live = live
	if cycle {
		r.heap.Cycles++
	}
}

// await waits until Run read the heap reads times and set the percents
// want, in order.
func (r *fakeRuntime) await(t *testing.T, reads int, want []int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the percents set", func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.reads == reads && slices.Equal(r.sets, want), fmt.Sprintf("%d reads, set %v; want %d, %v", r.reads, r.sets, reads, want)
	})
}
