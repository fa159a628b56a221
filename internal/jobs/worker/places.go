package worker

import "time"

// placeLimit is how many places the worker's core lets itself take:
// worker.max_parallel while etcd answers the runs' ends in time, fewer
// while it answers them slowly (docs/design-admission.md#places).
//
// Places are the engine's only back-pressure: what a worker has in hand
// is etcd's work in flight. A count alone cannot be right for both a
// burst and an overload: at twice the ceiling with max_parallel 2048
// (test/bench, 2026-11-29) the ends took 1.5-3 s, a job's next tick found
// its run of the tick before still holding its slot, every such run took
// the queue path, and the replicas completed 449 runs/s where 256 places
// completed 2,302; while a burst of 333 runs a replica at 256 places
// claimed a fifth of them after the instant. So the limit follows the
// ends' round trips as a congestion window follows a network's (additive
// increase, multiplicative decrease): a window whose ends took over
// slowEnd, one in ten or more, halves it, down to an eighth of
// max_parallel and leastPlaces at least (floorOf); one whose ends took
// under half of it, nine in ten, adds a sixteenth of it, up to
// max_parallel. It never exceeds max_parallel, the user's bound on what a
// replica has in hand. A cut lapses when no window judged it for staleWindow (lapse):
// the core's timer then wakes the runs waiting for a place (core.lapsed).
//
// Its fields are the core's, guarded by the core's lock.
type placeLimit struct {
	cut    int       // the limit while below max_parallel; 0: not cut
	judged time.Time // when a window last moved or held the limit
	from   time.Time // the window's start; zero: none yet
	// ends in the window, those slower than slowEnd, and those quicker
	// than half of it.
	ends, slow, quick int
}

const (
	// slowEnd is an end's round trip that says etcd is behind: on 3
	// replicas at 256 places (2026-11-29) nine tenths of the ends took
	// 250-400 ms at 2,000 jobs due on one second (the ceiling) and
	// 300-550 ms at twice it, and 1.5-3 s in the overload that collapsed.
	// A run of a job due every second is claimed up to half a second
	// ahead: an end slower than that makes the next tick find its slot
	// still taken. At a second instead, the places reached 1,024 before
	// a window was slow, and the overload collapsed as at 2048.
	slowEnd = 500 * time.Millisecond
	// placeWindow is how long ends are gathered before the limit moves:
	// in windows of a second the cut came too late (2048 to 256 took 6 s,
	// and the collapse it began outlasted it); growth is slow instead,
	// a sixteenth of the limit a window (at a quarter the places swung
	// between 256 and 800 each second).
	placeWindow = 250 * time.Millisecond
	// windowEnds is the fewest ends a window judges by; a window with
	// fewer is gathered on, and dropped once stale (staleWindow).
	windowEnds  = 8
	staleWindow = 10 * placeWindow
	// leastPlaces is the fewest places a cut leaves (max_parallel when
	// smaller, so a replica of 256 places or fewer is never cut). Under
	// overload a cut turns a replica's runs into shed ticks, which cost
	// etcd a record each, and the ends stay slow: at twice the ceiling on
	// 3 replicas at 256 places (test/bench, 2026-11-29 21:38-22:15) the
	// places were cut to 32-150 for most of the window and 1,143-2,406
	// runs/s completed (six runs, mean 1,757); uncut, 2,350 and 2,099. At
	// 2,048 places, cut to no fewer than 256: 2,033-2,204; uncut, 276-449
	// (collapsed). Variants that cut later (half the ends slow) or grew
	// back sooner (nine in ten under slowEnd) collapsed at 2,048: 831, 973.
	leastPlaces = 256
)

// floorOf is the fewest places a cut leaves under maxParallel: an eighth
// of it, least at the fewest.
func floorOf(maxParallel, least int) int {
	return min(maxParallel, max(least, maxParallel/8))
}

// of is the limit under maxParallel.
func (p *placeLimit) of(maxParallel int) int {
	if p.cut == 0 || p.cut >= maxParallel {
		return maxParallel
	}
	return p.cut
}

// lapse ends a cut that no window judged for staleWindow by now, and
// reports whether it did: the ends that would give it back are too few
// to judge (long runs hold the places, or the load went), and a worker
// that ends so few runs is no load on etcd.
func (p *placeLimit) lapse(now time.Time) bool {
	if p.cut == 0 || now.Sub(p.judged) < staleWindow {
		return false
	}
	p.cut = 0
	return true
}

// ended counts an end (one attempt of it) that took took, at now, and
// moves the limit when a window is over, never under floorOf(maxParallel,
// least). It returns the limit before and after, and whether a window
// judged it (a cut then lapses staleWindow after now unless another
// window judges it).
func (p *placeLimit) ended(now time.Time, took time.Duration, maxParallel, least int) (before, after int, judged bool) {
	before = p.of(maxParallel)
	if p.from.IsZero() || now.Sub(p.from) >= staleWindow && p.ends < windowEnds {
		*p = placeLimit{cut: p.cut, judged: p.judged, from: now}
	}
	p.ends++
	switch {
	case took > slowEnd:
		p.slow++
	case took < slowEnd/2:
		p.quick++
	}
	if p.ends < windowEnds || now.Sub(p.from) < placeWindow {
		return before, before, false
	}
	after = before
	switch {
	case p.slow*10 >= p.ends:
		after = max(floorOf(maxParallel, least), before/2)
	case p.quick*10 >= p.ends*9:
		after = min(maxParallel, before+max(1, before/16))
	}
	p.cut = after
	if after >= maxParallel {
		p.cut = 0
	}
	*p = placeLimit{cut: p.cut, judged: now, from: now}
	return before, after, true
}
