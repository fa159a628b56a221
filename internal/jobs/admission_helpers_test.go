package jobs_test

import (
	"slices"
	"time"
)

// Independent checks of admission, from the witness's own clock.

// mostStartsWithin is the most starts in any interval [a, a+per), and
// where that interval begins.
func mostStartsWithin(hits []hit, per time.Duration) (int, time.Time) {
	starts := make([]time.Time, len(hits))
	for i, h := range hits {
		starts[i] = h.Start
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	best, at, j := 0, time.Time{}, 0
	for i := range starts {
		for starts[i].Sub(starts[j]) >= per {
			j++
		}
		if n := i - j + 1; n > best {
			best, at = n, starts[j]
		}
	}
	return best, at
}

// mostAtOnce is the most requests in flight at one instant.
func mostAtOnce(hits []hit) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, h := range hits {
		edges = append(edges, edge{h.Start, 1}, edge{h.End, -1})
	}
	// Ends before starts at the same instant: a slot handed over is not
	// two holders.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}
