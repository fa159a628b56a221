package worker

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Runs an assignment's claim ahead found refused because the tick before
// still held their job's slot (docs/protocol.md, "The worker").

// claimLater tries the runs refused before the instant again: each as
// soon as the slots view shows its slot freed (the run before ended), the
// rest at the instant. Those refused at the instant take the queue path
// (claimChunk).
func (w *Worker) claimLater(ctx context.Context, r *claimRound) {
	if len(r.later) == 0 || !w.claimFreed(ctx, r) || !w.untilDue(ctx, r.sess, r.st.At) {
		return // settleLater queues them
	}
	w.claimInChunks(ctx, r)
}

// claimFreed claims, until the instant, the runs of r.later whose slot
// the view shows free, as the view changes: a run refused ahead because
// the tick before still held its slot so starts on time when that run
// ended before the instant, instead of waiting for a claim sent at it
// (the tail of a burst's lateness). False when ctx, the session or the
// assignment ended.
func (w *Worker) claimFreed(ctx context.Context, r *claimRound) bool {
	for len(r.later) > 0 {
		changed := w.d.Slots.Changed() // before the look: no change missed
		var freed, taken []assignedRun
		for _, run := range r.later {
			if i, ok := w.d.Slots.FreeIndex(slots.JobSlot, keys.SlotGroup(run.job.Name, ""), run.entry.Spec.MaxConcurrency); ok {
				run.slot = i
				freed = append(freed, run)
			} else {
				taken = append(taken, run)
			}
		}
		if len(freed) > 0 {
			// Refused again (the view was behind etcd), a run comes back
			// to r.later and waits for the view's next change.
			r.later = taken
			if !w.claimInChunksOf(ctx, r, freed) {
				return false
			}
		}
		// At most one look per lookEvery: under a burst the view changes
		// thousands of times a second.
		if !w.untilChangeOrDue(ctx, r.sess, changed, r.st.At) || !w.untilDue(ctx, r.sess, earliest(w.d.Clock.Now().Add(lookEvery), r.st.At)) {
			return false
		}
		if !w.d.Clock.Now().Before(r.st.At) {
			return true
		}
	}
	return true
}

// lookEvery spaces claimFreed's looks at the slots view.
const lookEvery = 10 * time.Millisecond

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// claimInChunks claims r.later at the instant, in chunks.
func (w *Worker) claimInChunks(ctx context.Context, r *claimRound) {
	later := r.later
	r.later = nil
	w.claimInChunksOf(ctx, r, later)
}

// claimInChunksOf claims later in chunks; false when a chunk found the
// assignment gone or left it to the leader.
func (w *Worker) claimInChunksOf(ctx context.Context, r *claimRound, later []assignedRun) bool {
	for len(later) > 0 {
		n := min(len(later), maxChunk)
		if !w.claimChunk(ctx, r, later[:n]) {
			// The assignment went, or the leader resolves it: the
			// chunks not sent give their places back too (they stayed
			// counted active, and max_parallel shrank by them for good).
			for _, run := range later[n:] {
				w.finish(run.runID)
			}
			return false
		}
		later = later[n:]
	}
	return true
}

// untilChangeOrDue waits until changed closes or at, whichever is first;
// false when ctx or the session ends first.
func (w *Worker) untilChangeOrDue(ctx context.Context, sess *session.Session, changed <-chan struct{}, at time.Time) bool {
	d := at.Sub(w.d.Clock.Now())
	if d <= 0 {
		return true
	}
	t := w.d.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
		return true
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	case <-sess.Done():
		return false
	}
}
