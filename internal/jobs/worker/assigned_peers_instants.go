package worker

import (
	"slices"
	"time"
)

// peerInstants is the peer view's assignments by instant, the instants in
// ascending order. The view holds every instant its peers are assigned
// ahead (the lookahead's, 7-17 at a burst of jobs due every second), and
// a scan after a change (peerView.due) has only those come to judge: it
// walks them and stops at the first instant to come. Walking every
// assignment cost a scan 26 µs at five replicas and 1,000 jobs, up to a
// hundred scans a second on each replica (BenchmarkPeerScan).
type peerInstants struct {
	order []int64 // UnixNano, ascending; each has a bucket in by
	by    map[int64]map[string]*peerAssignment
}

// put adds p, or replaces the assignment of its key.
func (x *peerInstants) put(p *peerAssignment) {
	at := p.at.UnixNano()
	b := x.by[at]
	if b == nil {
		if x.by == nil {
			x.by = map[int64]map[string]*peerAssignment{}
		}
		b = map[string]*peerAssignment{}
		x.by[at] = b
		i, _ := slices.BinarySearch(x.order, at)
		x.order = slices.Insert(x.order, i, at)
	}
	b[p.key] = p
}

// remove drops p's key, and its instant once it has no assignment left.
func (x *peerInstants) remove(p *peerAssignment) {
	at := p.at.UnixNano()
	b := x.by[at]
	delete(b, p.key)
	if len(b) > 0 || b == nil {
		return
	}
	delete(x.by, at)
	if i, ok := slices.BinarySearch(x.order, at); ok {
		x.order = slices.Delete(x.order, i, i+1)
	}
}

// upTo calls f for each assignment of an instant at or before now, and
// returns the first instant after now (zero: none). An assignment of an
// instant to come came before it, so it is due from its instant on
// (peerView.putLocked): the instant is the earliest it can be judged.
func (x *peerInstants) upTo(now time.Time, f func(p *peerAssignment)) time.Time {
	limit := now.UnixNano()
	for _, at := range x.order {
		if at > limit {
			return time.Unix(0, at).UTC()
		}
		for _, p := range x.by[at] {
			f(p)
		}
	}
	return time.Time{}
}
