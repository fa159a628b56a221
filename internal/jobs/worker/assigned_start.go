package worker

import (
	"context"
	"errors"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/rendezvous"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Start marks (docs/protocol.md, "Start marks"). A chunk claimed before
// its instant holds its runs' slots and has not started them; its marker
// says so. At the instant the worker rewrites the marker as started
// (assign.Claimer.StartChunk), naming the runs it claimed, and only then
// starts them. A worker killed in between leaves a marker still ahead:
// the leader then moves those runs to a live worker (late, not lost)
// instead of recording them lost, which is for runs that may have
// started.

// heldRun is a run a chunk claimed and the slots it holds.
type heldRun struct {
	run  assignedRun
	held *slots.Held
}

// startClaimed starts the runs chunk claimed: at once when it was claimed
// at or after its instant (its marker says they may have started), else
// in a goroutine that waits for the instant and writes the start mark
// first. marker is the chunk's index in r.markers.
func (a *assignedRunner) startClaimed(ctx context.Context, r *claimRound, chunk, marker int, ahead bool, claimed []heldRun, startedAt time.Time) {
	if !ahead || len(claimed) == 0 {
		for _, h := range claimed {
			a.runHeld(ctx, r, h, startedAt)
		}
		return
	}
	jobs := make([]string, len(claimed))
	for i, h := range claimed {
		jobs[i] = h.run.job.Name
	}
	ticket := a.marks.join(r, chunk, marker, jobs)
	r.running.Add(1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer r.running.Done()
		if a.markStarted(ctx, r, ticket) {
			for _, h := range claimed {
				a.runHeld(ctx, r, h, startedAt)
			}
			return
		}
		r.unsettled.Add(1) // the leader resolves the chunk
		for _, h := range claimed {
			a.dropHeld(ctx, h)
		}
	}()
}

// runHeld executes one claimed run in a goroutine of its own.
func (a *assignedRunner) runHeld(ctx context.Context, r *claimRound, h heldRun, startedAt time.Time) {
	r.running.Add(1)
	a.wg.Add(1)
	go func() {
		growRunStack()
		defer a.wg.Done()
		defer r.running.Done()
		defer a.core.finish(h.run.runID)
		if !a.runClaimed(ctx, h.run, h.held, startedAt) {
			r.unsettled.Add(1)
		}
	}()
}

// markStarted waits for r's instant and writes the start mark of t's
// chunk, with the marks of the others due then (assigned_marks.go); false
// when its runs must not start: the session ended, or the marker changed
// (handed off, taken over) or this incarnation is taken for dead (the
// leader moves or records them). A worker that stops before the instant
// first hands the assignment to a replica that stays; one it could not
// hand off starts its runs, which the drain lets end, as one claimed at
// its instant does.
func (a *assignedRunner) markStarted(ctx context.Context, r *claimRound, t *markTicket) bool {
	if !untilDue(ctx, a.d.Clock, r.sess, r.st.At) && ctx.Err() != nil {
		// Stopping before the instant: a replica that stays runs them
		// (handOffAhead); when none takes them, they start here.
		a.mover.handOffAhead(r)
	}
	ctx = context.WithoutCancel(ctx)
	if !untilDue(ctx, a.d.Clock, r.sess, r.st.At) && a.marks.leave(t) {
		return false
	}
	ttl := a.d.Config().Cluster.SessionTTL.D()
	b := settleRetry.Start()
	for try := 0; ; try++ {
		sctx, cancel := context.WithTimeout(ctx, ttl)
		var rev int64
		var err error
		if try == 0 {
			rev, err = a.marks.mark(sctx, t)
		} else {
			s := t.start() // alone, as before marks went together
			rev, err = a.d.Assign.Claimer().StartChunk(sctx, s.Assignment, s.Chunk, s.Rev, s.Jobs)
		}
		cancel()
		switch {
		case err == nil:
			r.setMarkerRevision(t.marker, rev)
			return true
		case errors.Is(err, assign.ErrGone), r.sess.Err() != nil:
			r.log.Warn("claimed runs not started: the leader resolves them", "chunk", t.chunk, "err", err)
			return false
		}
		r.log.Warn("writing a chunk's start mark failed; trying again", "chunk", t.chunk, "err", err, "in", b.Delay())
		if !b.Wait(r.sess.Context(), a.d.Clock) {
			return false
		}
	}
}

// dropHeld gives up a claimed run that will not start here: its slots (if
// still this claim's; else its lease took them) and its place.
func (a *assignedRunner) dropHeld(ctx context.Context, h heldRun) {
	defer a.core.finish(h.run.runID)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	if err := a.d.Slots.Release(rctx, h.held); err != nil && !errors.Is(err, slots.ErrNotOwner) {
		a.d.Log.Warn("the slot of a run that will not start could not be released: its lease frees it", "run_id", h.run.runID, "err", err)
	}
}

// handOffAhead moves r's assignment, claimed ahead and not started, to a
// live lean replica (assign.Store.StealAhead, the take-over's transaction:
// the markers and the claims' slots go with the move), so a stopping
// replica starts nothing after it said it stopped claiming. Best effort:
// another chunk of r marked started, or no replica left, keeps it here.
func (m *mover) handOffAhead(r *claimRound) {
	st := r.stored()
	to := rendezvous.Pick(m.leanPeers(), st.Key(m.d.Keys))
	if to == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	if _, err := m.d.Assign.StealAhead(ctx, st.Assignment, st.ModRevision, to); err == nil {
		m.d.Log.Info("stopping: runs claimed ahead and not started given to a replica that stays", "to", to, "runs", len(st.Jobs), "due", st.At)
	}
}
