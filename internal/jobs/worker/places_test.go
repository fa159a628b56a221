package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// window feeds p one window of n ends that each took took, from at, and
// returns the limit after it and the window's end; the first of them
// took first instead. A cut leaves leastPlaces.
func window(p *placeLimit, at time.Time, n int, took time.Duration, maxParallel int, first ...time.Duration) (int, time.Time) {
	after := p.of(maxParallel)
	for i := range n {
		d := took
		if i < len(first) {
			d = first[i]
		}
		_, after, _ = p.ended(at.Add(time.Duration(i)*placeWindow/time.Duration(n-1)), d, maxParallel, leastPlaces)
	}
	return after, at.Add(placeWindow + time.Millisecond)
}

// The limit of places follows the ends' round trips: slow ends halve it
// a window down to an eighth of max_parallel (4,096 here: 512), ends
// between slow and quick hold it, quick ones give it back a sixteenth of
// itself a window up to max_parallel and never beyond, and a window of
// too few ends judges nothing.
func TestPlacesFollowTheEndsRoundTrips(t *testing.T) {
	const maxParallel = 4096
	var p placeLimit
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var got int
	if got, at = window(&p, at, windowEnds-1, 2*time.Second, maxParallel); got != maxParallel {
		t.Fatalf("after %d slow ends: limit %d, want %d (too few to judge)", windowEnds-1, got, maxParallel)
	}
	p = placeLimit{}
	want := []int{2048, 1024, 512, 512}
	for i, w := range want {
		if got, at = window(&p, at, 20, 2*time.Second, maxParallel); got != w {
			t.Fatalf("slow window %d: limit %d, want %d", i+1, got, w)
		}
	}
	if got, at = window(&p, at, 20, 400*time.Millisecond, maxParallel); got != 512 {
		t.Fatalf("a window of ends at 400ms: limit %d, want it held at 512", got)
	}
	// One slow end in twenty is not a slow window.
	if got, at = window(&p, at, 20, 10*time.Millisecond, maxParallel, 2*time.Second); got != 544 {
		t.Fatalf("a window of quick ends, one in twenty slow: limit %d, want 544", got)
	}
	for i := 0; got < maxParallel; i++ {
		if i == 40 {
			t.Fatalf("quick ends for 40 windows: limit %d, want %d", got, maxParallel)
		}
		before := got
		if got, at = window(&p, at, 20, 10*time.Millisecond, maxParallel); got <= before {
			t.Fatalf("a window of quick ends at limit %d: %d, want more", before, got)
		}
	}
	if got, _ = window(&p, at, 20, 10*time.Millisecond, maxParallel); got != maxParallel {
		t.Fatalf("quick ends at max_parallel: limit %d, want %d, never more", got, maxParallel)
	}
}

// A cut leaves an eighth of max_parallel and at least leastPlaces, so a
// replica of 256 places or fewer is never cut (under overload, fewer
// places turn runs into shed ticks, which etcd records one by one), and
// a cut no window judged for staleWindow is over: with long runs in every
// place left, no end would ever come to give the places back.
func TestACutLeavesPlacesAndLapses(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ maxParallel, floor int }{{2, 2}, {64, 64}, {256, 256}, {300, 256}, {1024, 256}, {2048, 256}, {4096, 512}} {
		var p placeLimit
		got, end := 0, at
		for range 6 {
			got, end = window(&p, end, 20, 2*time.Second, c.maxParallel)
		}
		if got != c.floor {
			t.Errorf("max_parallel %d after six slow windows: limit %d, want %d", c.maxParallel, got, c.floor)
		}
		p.lapse(end.Add(staleWindow - 2*time.Millisecond))
		if got := p.of(c.maxParallel); got != c.floor {
			t.Errorf("max_parallel %d just before the cut lapses: limit %d, want %d", c.maxParallel, got, c.floor)
		}
		p.lapse(end.Add(staleWindow))
		if got := p.of(c.maxParallel); got != c.maxParallel {
			t.Errorf("max_parallel %d with no window judged for %s: limit %d, want the cut over (%d)", c.maxParallel, staleWindow, got, c.maxParallel)
		}
	}
}

// slowReleases is the real semaphore whose releases take slow, as a
// release does that etcd answers behind a backlog; it counts the
// releases in flight.
type slowReleases struct {
	*slots.Semaphore
	slow time.Duration

	mu       sync.Mutex
	inFlight int
	peaks    []int // the releases in flight as each began
}

func (s *slowReleases) begin() func() {
	s.mu.Lock()
	s.inFlight++
	s.peaks = append(s.peaks, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.slow)
	return func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}
}

func (s *slowReleases) Release(ctx context.Context, h *slots.Held, then ...clientv3.Op) error {
	defer s.begin()()
	return s.Semaphore.Release(ctx, h, then...)
}

// A worker whose ends etcd answers slowly takes fewer runs in hand: at
// max_parallel 16 (cut to no fewer than 8 here, where leastPlaces would
// leave 16 uncut) with every release slower than slowEnd and a window,
// the first two rounds of ends are slow, and from then on at most 8 runs
// end at once (the limit halved); every run still runs. With places fixed
// at max_parallel, 16 ended at once in every round.
func TestSlowEndsCutThePlaces(t *testing.T) {
	sr := &slowReleases{slow: max(slowEnd, placeWindow) + 200*time.Millisecond}
	var names []string
	for i := range 48 {
		names = append(names, fmt.Sprintf("j%02d", i))
	}
	exec := &countingExecutor{started: make(chan string, len(names))}
	var others []string
	others = append(others, names[1:]...)
	o := testWorkerOptions{maxParallel: 16, leastPlaces: 8, wrap: func(s *slots.Semaphore) Slots { sr.Semaphore = s; return sr }}
	for _, n := range others {
		o.jobs = append(o.jobs, job(n))
	}
	tw := startTestWorker(t, "/places/", job(names[0]), exec, o)
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, names...)
	for _, name := range names {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)); rec.Outcome != runs.Succeeded {
			t.Errorf("%s: recorded %s %q, want succeeded", name, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	sr.mu.Lock()
	peaks := append([]int(nil), sr.peaks...)
	sr.mu.Unlock()
	if len(peaks) != len(names) {
		t.Fatalf("%d releases, want %d", len(peaks), len(names))
	}
	if first := peaks[15]; first != 16 {
		t.Fatalf("the first round ended %d runs at once, want 16 (max_parallel): the test did not fill the places", first)
	}
	late := 0
	for _, p := range peaks[32:] {
		late = max(late, p)
	}
	if late > 8 {
		t.Errorf("after two rounds of slow ends, %d runs ended at once (releases in flight as each began: %v), want at most 8", late, peaks)
	}
}

// A cut that lapses wakes whoever waits for a place: the places it left
// are held by runs that have not ended, so no run's finish would.
func TestALapsedCutWakesTheWaiters(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	d := validDeps(t, clock.Now())
	d.Clock = clock
	c := newCore(d, func() {})
	c.leastPlaces = 8 // a cut of the config's max_parallel
	for range 6 * 20 {
		clock.Advance(placeWindow / 16)
		c.ended(2 * time.Second)
	}
	c.mu.Lock()
	limit := c.places.of(c.maxParallel())
	c.mu.Unlock()
	if limit != floorOf(c.maxParallel(), 8) || limit >= c.maxParallel() {
		t.Fatalf("after six windows' slow ends: limit %d, want the floor %d under max_parallel %d", limit, floorOf(c.maxParallel(), 8), c.maxParallel())
	}
	id := func(i int) string { return fmt.Sprint("held-", i) }
	if n, _ := c.takePlaces(limit, id); n != limit {
		t.Fatalf("took %d of %d places", n, limit)
	}
	n, freed := c.takePlaces(1, func(int) string { return "waiting" })
	if n != 0 {
		t.Fatal("a place beyond the cut was taken")
	}
	clock.Advance(staleWindow)
	select {
	case <-freed:
	case <-time.After(10 * time.Second):
		t.Fatal("the cut lapsed and the waiter was not woken")
	}
	if n, _ := c.takePlaces(1, func(int) string { return "waiting" }); n != 1 {
		t.Fatal("woken after the lapse, the waiter found no place")
	}
}
