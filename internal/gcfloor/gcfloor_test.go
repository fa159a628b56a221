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

// The heap goal a percent gives (the runtime's: live × (1 + percent/100),
// at least its minimum heap scaled by the percent) is the live heap plus
// the headroom, to within a percent of the live heap, or twice the live
// heap (GOGC's default) when that is more; below the runtime's minimum heap
// it is the headroom and at most that minimum more.
func TestPercentMakesTheGoalTheLiveHeapPlusTheHeadroom(t *testing.T) {
	f, err := New(64*mib, time.Second, clockwork.NewFakeClock(), &fakeRuntime{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		live    uint64
		percent int
	}{
		{0, 1600}, {1 * mib, 1600}, {4 * mib, 1600}, {20 * mib, 320}, {30 * mib, 214},
		{64 * mib, 100}, {100 * mib, 100}, {2048 * mib, 100},
	} {
		p := f.Percent(c.live)
		if p != c.percent {
			t.Errorf("Percent(%d MiB) = %d, want %d", c.live/mib, p, c.percent)
		}
		goal := max(c.live*uint64(100+p), heapMinimum*uint64(p)) / 100
		lo, hi := max(c.live+64*mib, 2*c.live), max(c.live+64*mib, 2*c.live)+c.live/100
		if c.live < heapMinimum { // the runtime's least goal, scaled by the percent, decides
			lo, hi = 64*mib, heapMinimum+64*mib
		}
		if goal < lo || goal > hi {
			t.Errorf("live %d MiB: goal %d MiB, want %d to %d MiB", c.live/mib, goal/mib, lo/mib, hi/mib)
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
		{64 * mib, 0, clock, "interval 0s"},
		{64 * mib, time.Second, nil, "no clock"},
	} {
		_, err := New(c.headroom, c.every, c.clock, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %s): %v, want an error saying %q", c.headroom, c.every, err, c.want)
		}
	}
}

// Run sets the percent for the live heap at once and again after each
// collection (not on a live heap read between two), and puts back the
// percent it found when it stops.
func TestRunSetsThePercentAfterEachCollection(t *testing.T) {
	clock := clockwork.NewFakeClock()
	rt := &fakeRuntime{percent: 100, live: 20 * mib, cycles: 3}
	f, err := New(64*mib, time.Second, clock, rt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	rt.await(t, []int{320})

	rt.collected(40*mib, false) // read between collections: kept
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	rt.collected(32*mib, true)
	clock.Advance(time.Second)
	rt.await(t, []int{320, 200})
	rt.collected(100*mib, true)
	clock.Advance(time.Second)
	rt.await(t, []int{320, 200, 100})

	cancel()
	<-done
	rt.await(t, []int{320, 200, 100, 100})
	if rt.percent != 100 {
		t.Errorf("after Run: percent %d, want the 100 it found", rt.percent)
	}
}

// In this process: the runtime's own percent follows the live heap.
func TestRunSetsTheProcesssPercent(t *testing.T) {
	f, err := New(64*mib, 5*time.Millisecond, clockwork.NewRealClock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := gogc()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	poll.Until(t, 10*time.Second, "the process's GC percent for its live heap", func() (bool, string) {
		runtime.GC()
		live, _ := Process().Live()
		want := f.Percent(live)
		return gogc() == want && want > 100, fmt.Sprintf("percent %d, want %d (live %d bytes)", gogc(), want, live)
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
	live    uint64
	cycles  uint64
	percent int
	sets    []int
}

func (r *fakeRuntime) Live() (uint64, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live, r.cycles
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
	r.live = live
	if cycle {
		r.cycles++
	}
}

func (r *fakeRuntime) await(t *testing.T, want []int) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the percents set", func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Equal(r.sets, want), fmt.Sprintf("set %v, want %v", r.sets, want)
	})
}
