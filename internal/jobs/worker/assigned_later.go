package worker

import (
	"context"
)

// Runs refused before their instant (their slot still taken by the run
// before) are tried again at it: claimLater.

// claimLater tries the runs refused before the instant again at the
// instant: the run before may have ended by then. They gave their places
// back when refused (a run waiting for its slot holds no place under
// max_parallel, docs/design-admission.md) and take them again here, as
// many as are free. With none free they wait for one as a chunk does
// (reserve), holding none. What is not to start is shed before each chunk
// and after each wait (shedWaiting); those refused again take the queue
// path (claimChunk), and so do the rest when the worker stops
// (settleLater). Sending every
// run that found no place to the queue path made a worker behind pay a
// queue entry, its ranking and its claim for each: at twice the ceiling
// it completed half the runs.
func (a *assignedRunner) claimLater(ctx context.Context, r *claimRound) {
	if len(r.later) == 0 || !untilDue(ctx, a.d.Clock, r.sess, r.st.At) {
		return // settleLater queues them
	}
	later := r.later
	r.later = nil
	late, stop := shedTimer(a.d.Clock, r.st.At) // once: after it every wake sheds what is late
	defer stop()
	for {
		// Before each chunk and after each wait: the instant may be
		// long past when the round gets here (a worker behind sends an
		// assignment's chunks for seconds), and a tick past its
		// starting deadline is never started.
		if later = a.shedWaiting(ctx, r, later); len(later) == 0 {
			return
		}
		n, freed := a.core.takePlaces(min(maxChunk, len(later)), func(i int) string { return later[i].runID })
		if n == 0 {
			switch awaitPlace(ctx, r.sess, freed, late) {
			case waitEnded:
				r.later = later
				return
			case becameLate:
				late = nil
			}
			continue
		}
		if !a.claimChunk(ctx, r, later[:n]) {
			return // gone, or the leader resolves it: the rest hold no place
		}
		later = later[n:]
	}
}

// shedWaiting records the runs of later that are not to start any more
// (notToStart: past the starting deadline, paused, superseded by a newer
// tick) and returns the others. They hold no place.
func (a *assignedRunner) shedWaiting(ctx context.Context, r *claimRound, later []assignedRun) []assignedRun {
	now := a.d.Clock.Now()
	var ends []unclaimedEnd
	keep := later[:0:0]
	for _, run := range later {
		if end, ok := a.notToStart(run.entry, r.st.At, now); ok {
			ends = append(ends, end)
			continue
		}
		keep = append(keep, run)
	}
	a.shed(ctx, r, ends)
	return keep
}
