package fault

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// backfilledJob is the job the backfiller asks for: every 500 ms, keeping
// 10 records, so its records are pruned a few seconds after its runs.
const backfilledJob = "fast"

// backfills is what the backfiller asked and was answered.
type backfills struct {
	asked, answered, queued, existing int
	queuedIDs                         []string // the first few, for the log
}

// startBackfills asks a running replica, every 2 s until stop, to backfill
// backfilledJob from its first run the witness saw to a second ago
// (docs/design-leader.md#backfill-never-reruns-a-tick). Every tick there
// was authorized by the schedule, and ran or was recorded (ticks_accounted),
// so a backfill finds each existing, its record kept or pruned (the
// job's pruned stretches), and a tick queued is a violation: dropped by
// the schedule (which the backfill would otherwise hide from G2 and
// property 3), or pruned with no stretch, and then also run twice,
// recorded twice. Errors (a replica killed, frozen, cut off) are counted
// as unanswered. Not for a cluster of mixed versions: an older replica's
// backfill, or prune, knows no stretches.
func (r *runner) startBackfills() (stop func() backfills) {
	ctx, cancel := context.WithCancel(context.Background())
	var out backfills
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.backfillOnce(ctx, i, &out)
		}
	})
	return func() backfills {
		cancel()
		wg.Wait()
		return out
	}
}

// backfillOnce sends one backfill to the i-th running replica in turn.
func (r *runner) backfillOnce(ctx context.Context, i int, out *backfills) {
	var from time.Time
	for _, run := range r.w.Runs() {
		if run.Job == backfilledJob && (from.IsZero() || run.ScheduledAt.Before(from)) {
			from = run.ScheduledAt
		}
	}
	to := time.Now().Add(-time.Second)
	if from.IsZero() || !from.Before(to) {
		return
	}
	reps := r.c.Replicas
	rep := reps[i%len(reps)]
	if !rep.Running() || rep.Frozen() {
		return
	}
	out.asked++
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := rep.API.Backfill(rctx, backfilledJob, from, to)
	if err != nil {
		return
	}
	out.answered++
	out.queued += len(res.Queued)
	out.existing += len(res.SkippedExisting)
	for _, id := range res.Queued {
		if len(out.queuedIDs) < 5 {
			out.queuedIDs = append(out.queuedIDs, id)
		}
	}
}

// problem is the violation of a backfill that queued a tick, or "".
func (b backfills) problem() string {
	if b.queued == 0 {
		return ""
	}
	return fmt.Sprintf("backfill: %d ticks of %s queued (e.g. %v); every tick since its first run was authorized, "+
		"so each was dropped by the schedule or its record pruned outside the pruned stretches", b.queued, backfilledJob, b.queuedIDs)
}

// String is the summary's part.
func (b backfills) String() string {
	return fmt.Sprintf("backfills=%d/%d backfill_queued=%d backfill_existing=%d", b.answered, b.asked, b.queued, b.existing)
}
