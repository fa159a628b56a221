package leader

import (
	"time"

	"github.com/etcdsched/scheduler/internal/schedule"
)

// How far ahead ticks are materialized.
//
// A leader that dies without resigning (SIGKILL, a crash, a partition)
// keeps the election until its lease expires: up to session_ttl, plus the
// half second etcd's lessor takes to notice. Ticks due in that gap can only
// run if they were materialized before it, so the leader writes each job's
// ticks up to Deps.Lookahead ahead (the replica sets session_ttl +
// NearLookahead: LookaheadFor), and the next leader finds the queue still
// holding about NearLookahead of ticks when it takes over. Far-ahead
// entries cost etcd and every replica's view memory, so they are bounded
// per job (a job @every 100ms would otherwise queue 70 entries at a 5s TTL,
// 620 at 60s) and overall.
const (
	// NearLookahead: ticks due within this long are always materialized
	// (unless paused), whatever the bounds: a worker claims a run 25ms
	// before it is due and must see its entry well before that.
	NearLookahead = 2 * time.Second
	// maxAhead bounds the ticks of one job within its lookahead: beyond
	// NearLookahead a job's lookahead ends at its maxAhead-th next tick.
	maxAhead = 100
	// maxQueued bounds the queue overall: while it holds this many
	// entries or more, jobs are planned NearLookahead ahead only.
	maxQueued = 20_000
)

// maxFarPerPass bounds the ticks beyond NearLookahead one pass writes for
// a job. A new leader finds the old one's cursor about session_ttl behind
// its own horizon: 50 ticks of a job @every 100ms at a 5s TTL, none of
// them due within NearLookahead. Written at once, the ten jobs of the
// failover benchmark's 500 entries stalled claims and releases long enough
// to cost each job a tick; ten a pass, a tick apart, they spread over
// half a second.
const maxFarPerPass = 10

// farCap is how many of ticks (in order) one pass writes: every tick due
// by near, and maxFarPerPass beyond.
func farCap(ticks []plannedTick, near time.Time) int {
	far := 0
	for i, t := range ticks {
		if t.At.After(near) {
			if far++; far > maxFarPerPass {
				return i
			}
		}
	}
	return len(ticks)
}

// LookaheadFor is the lookahead that covers a leader's death: its lease
// holds the election for up to ttl, and the next leader still finds
// NearLookahead of ticks queued when it takes over.
func LookaheadFor(ttl time.Duration) time.Duration {
	return ttl + NearLookahead
}

// reach is how far ahead of now a job's ticks are planned in this pass:
// far, but no further than its maxAhead-th tick after now, and never less
// than near. It walks at most maxAhead ticks, fewer for a slow job.
func reach(sched schedule.Schedule, now time.Time, near, far time.Duration) time.Duration {
	if far <= near {
		return far
	}
	t := now
	for range maxAhead {
		if t = sched.Next(t); t.IsZero() || t.Sub(now) > far {
			return far
		}
	}
	return max(near, t.Sub(now))
}

// lookahead is how far ahead to plan job's ticks now: nothing while it is
// paused (a resume plans from the moment it comes), near only while the
// queue is full, else its reach.
func (l *leader) lookahead(sched schedule.Schedule, now time.Time, paused bool) time.Duration {
	near := l.near()
	switch {
	case paused:
		return 0
	case l.d.Queue != nil && l.d.Queue.Len() >= l.maxQueued:
		return near
	}
	return reach(sched, now, near, l.d.Lookahead)
}

// near is how far ahead ticks are always planned: NearLookahead, or the
// whole lookahead when it is shorter.
func (l *leader) near() time.Duration { return min(NearLookahead, l.d.Lookahead) }

// A lean job's ticks are assigned in batches: when its next tick comes
// within its lookahead it wakes, and its ticks are assigned up to the next
// multiple of the batch's grid (in Unix time) beyond the lookahead, at
// most its ticks beyond it. Every tick within the lookahead is still
// assigned after every pass (docs/protocol.md, "Authorize"). In a term's
// first lookahead the batches are one grid (and as many ticks) longer: a
// new leader assigns each job's next batch at its first look, whatever its
// predecessor left, so the handover shows at once and the margin its own
// death would need starts from its passes. The grid is common to all jobs,
// so that jobs due at the same instants wake at the same pass and share
// their assignments (full chunks of up to 40 runs): spread by job, the
// passes split each instant's assignments into smaller ones, and a
// worker's claims with them.
type leanBatch struct {
	grid  time.Duration
	ticks int
}

// leanWindowBatch is a window's batch: a job's ticks up to the next 10 s
// grid line, 10 at most. A longer batch writes a job's cursor less often
// (a compare and a put a batch), but a window's transaction also takes an
// assignment per worker and instant (windowCost), so it leaves fewer jobs
// a window and fewer runs an assignment, and each assignment costs a
// worker a chunk's claim. For jobs ticking every second, I instants a
// batch and n workers, cursors, assignments and chunks cost about 2/I +
// 7n/(127 - nI) index operations a run: 10 instants 0.42 against 5's
// 0.59 at three workers, 0.65 against 0.74 at five, 1.06 against 0.93 at
// seven. Measured at three, the cursors' events fell by 0.04-0.11 a
// replica a run and the operations by less than the model says (the extra
// assignments); over five workers neither fell, so a window's ticks of an
// instant go to three at most (windowWorkers), where 10 s is the better.
// Ten ticks, not more: a pass writes at most maxFarPerPass ticks beyond
// NearLookahead.
func leanWindowBatch() leanBatch {
	return leanBatch{grid: 10 * time.Second, ticks: maxFarPerPass}
}

// leanHorizon is how far ahead of now a lean job's ticks are assigned when
// it wakes with lookahead la, in batches of b, fresh in its term's first
// lookahead. A lookahead cut to near (a full queue, a short TTL in tests)
// is kept as it is.
func leanHorizon(sched schedule.Schedule, now time.Time, la, near time.Duration, b leanBatch, fresh bool) time.Duration {
	if la <= near {
		return la
	}
	end := now.Add(la)
	limit := end.Truncate(b.grid)
	if limit.Before(end) {
		limit = limit.Add(b.grid)
	}
	batch := b.ticks
	if fresh {
		limit, batch = limit.Add(b.grid), 2*b.ticks
	}
	h := end
	for range batch {
		next := sched.Next(h)
		if next.IsZero() || next.After(limit) {
			break
		}
		h = next
	}
	return h.Sub(now)
}
