package worker

import (
	"context"
	"errors"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Late ticks shed in chunk records (docs/design-shed.md, "Writer"): a
// worker behind sheds thousands of ticks a second, and a record and an
// unstarted marker each were what an overload spent etcd on. Those whose
// record says all there is (the first attempt of a scheduled tick, due
// well before the shed, missed or skipped for its overlap: dueBeforeShed,
// with no input, whose record causes nothing: no notification, chain or
// health) go, up to maxShedChunk at a time, in one chunk record that takes
// them out of the assignment in the same transaction (assign.Store.Shed);
// the round claims the rest from the assignment as written. Only while
// every member reads chunk records (assign.ReadsChunks): a replica of an
// older release would find such a tick without a record and backfill would
// run it again. The others, and a chunk whose transaction fails, are
// recorded a tick each (recordUnclaimed).

// maxShedChunk is the most ticks one chunk record holds: its transaction
// compares two keys a tick, under etcd's --max-txn-ops of 128.
const maxShedChunk = 40

// minShedChunk: fewer ticks cost no less in a chunk record (its put and
// the assignment's) than in records of their own.
const minShedChunk = 2

// shed records ends, runs of r not to start, in chunk records where they
// may go and the rest a record each (recordUnclaimed). It gives back no
// place: a caller whose runs hold places gives them back after it.
func (a *assignedRunner) shed(ctx context.Context, r *claimRound, ends []unclaimedEnd) {
	if len(ends) == 0 {
		return // the common case: prepare's and shedWaiting's every call
	}
	a.recordUnclaimed(ctx, &r.st, a.shedInChunks(ctx, r, ends), &r.unsettled)
}

// shedInChunks records those of ends a chunk record may hold in chunk
// records, taking them out of r's assignment, and returns the others for
// records of their own.
func (a *assignedRunner) shedInChunks(ctx context.Context, r *claimRound, ends []unclaimedEnd) []unclaimedEnd {
	if a.d.Peers == nil || !a.d.Peers.Every(assign.ReadsChunks) {
		return ends
	}
	var chunk []runs.ShedRun
	var in, rest []unclaimedEnd
	now := a.d.Clock.Now()
	for _, end := range ends {
		if t, ok := a.chunkTick(end, now); ok {
			chunk, in = append(chunk, t), append(in, end)
		} else {
			rest = append(rest, end)
		}
	}
	for len(chunk) >= minShedChunk {
		n := min(len(chunk), maxShedChunk)
		if !a.recordChunk(ctx, r, runs.ChunkRecord{At: r.st.At, EndedAt: now, Runs: chunk[:n]}, in[:n]) {
			rest = append(rest, in[:n]...)
		}
		chunk, in = chunk[n:], in[n:]
	}
	return append(rest, in...)
}

// chunkTick is end's tick in a chunk record, if one may hold it: a tick
// due before the shed (dueBeforeShed), what NotStarted records for it,
// and nothing its record causes.
func (a *assignedRunner) chunkTick(end unclaimedEnd, now time.Time) (runs.ShedRun, bool) {
	t, ok := end.entry.Shed(end.outcome, end.msg)
	if !ok || !dueBeforeShed(end, now) {
		return runs.ShedRun{}, false
	}
	rec := end.entry.NotStarted(end.outcome, now, end.msg)
	if len(follow.Record(a.d.Keys, a.d.Config(), end.entry.JobSpec(), &rec, end.entry.Input, rec.EndedAt).All()) > 0 {
		return runs.ShedRun{}, false
	}
	return t, true
}

// dueBeforeShed reports whether end's tick was due well before now: a
// leader's withdrawal takes a job's cursor back to its own now (a pause),
// and plans again a tick due after it, whose claim compares the run's own
// record only (docs/design-shed.md, "Writer"). Replicas' clocks agree
// within slots.MaxClockSkew (docs/design-admission.md), so a tick due
// more than that before the shed is not planned again: a missed tick once
// that late (a starting deadline may be shorter); one skipped for its
// overlap only once more than shedAfter late, the round behind that an
// overload makes (a round that keeps up sheds few); a paused job's tick,
// skipped at its lead, never.
func dueBeforeShed(end unclaimedEnd, now time.Time) bool {
	late := now.Sub(end.entry.ScheduledAt)
	switch {
	case end.outcome == runs.Missed:
		return late > slots.MaxClockSkew
	case end.outcome == runs.Skipped && end.reason == metrics.ReasonOverlap:
		return late > shedAfter
	}
	return false
}

// recordChunk writes chunk, the records of ends, and takes them out of r's
// assignment; false when it did not (a tick decided meanwhile, the
// assignment moved, etcd did not answer): each is then recorded alone,
// under the compare of the assignment as r read it, so a chunk whose
// outcome is unknown is never recorded twice.
func (a *assignedRunner) recordChunk(ctx context.Context, r *claimRound, chunk runs.ChunkRecord, ends []unclaimedEnd) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	next, err := a.d.Assign.Shed(wctx, r.stored(), chunk)
	if err != nil {
		if !errors.Is(err, assign.ErrConflict) {
			r.log.Warn("recording shed runs in a chunk record failed: each is recorded alone", "runs", len(ends), "err", err)
		}
		return false
	}
	r.rewrote(next)
	a.shedTwice(wctx, ends)
	for _, end := range ends {
		a.d.Metrics.NotStarted(end.entry.Job, string(end.outcome), end.reason)
	}
	first := ends[0]
	a.d.Log.Info("runs not started", "runs", len(ends), "due", chunk.At, "first_job", first.entry.Job,
		"first_outcome", first.outcome, "first_reason", first.msg, "chunk_record", true)
	return true
}
