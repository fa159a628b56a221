package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Assigned runs that are not to start (docs/protocol.md, "Shedding"):
// past their starting deadline (missed), of a paused job (skipped), or
// superseded: more than shedAfter late while a newer tick of their job is
// due, which the job's catch_up (latest or none) runs in their place, as
// the leader's plan does with ticks it finds late. A worker behind (more
// ticks due than it can start) so sheds its oldest ticks and starts the
// newest on time, instead of starting every tick later and later until
// the starting deadline records them all missed. They are recorded in one
// transaction per chunk, which costs etcd a fraction of a run's.

// shedAfter is how late an assigned run may start while a newer tick of
// its job is due: the leader's tolerance for a tick it plans late.
const shedAfter = time.Second

// unclaimedEnd is the record of an assigned run that does not start.
type unclaimedEnd struct {
	entry   *queue.Entry
	outcome runs.Outcome
	reason  string // the skipped metric's reason
	msg     string
}

// shedLate records the runs of jobs that are not to start (notToStart)
// once r's assignment is more than shedAfter late (in chunk records where
// they may go, assigned_chunk.go), before they wait for room under
// max_parallel, and returns the others. A worker behind so sheds an old
// instant's runs as soon as a newer tick of their job is due, instead of
// when room frees: the room goes to the newest ticks.
func (a *assignedRunner) shedLate(ctx context.Context, r *claimRound, jobs []assign.Job) []assign.Job {
	st := &r.st
	now := a.d.Clock.Now()
	if !now.After(st.At.Add(shedAfter)) {
		return jobs
	}
	var ends []unclaimedEnd
	keep := make([]assign.Job, 0, len(jobs))
	for _, j := range jobs {
		it, err := a.d.Specs.Resolve(ctx, &queue.Item{Entry: pendingEntry(st, j)})
		if err == nil {
			if end, ok := a.notToStart(it.Entry, st.At, now); ok {
				ends = append(ends, end)
				continue
			}
		}
		keep = append(keep, j) // prepare decides, as for a run on time
	}
	a.shed(ctx, r, ends) // they hold no place
	return keep
}

// notToStart says whether e, due at at, is not to start at now, and with
// what record.
func (a *assignedRunner) notToStart(e *queue.Entry, at, now time.Time) (unclaimedEnd, bool) {
	j := &e.Spec
	switch {
	case now.After(at.Add(j.StartingDeadline.D())):
		return unclaimedEnd{e, runs.Missed, metrics.ReasonDeadline,
			fmt.Sprintf("not claimed by its starting deadline %s (due %s)", j.StartingDeadline, at.UTC().Format(runs.TimeFormat))}, true
	case a.d.Paused != nil && a.d.Paused.Is(e.Job, j.Paused):
		return unclaimedEnd{e, runs.Skipped, metrics.ReasonPaused, "not started: the job is paused"}, true
	}
	if newer, ok := superseded(j, at, now); ok {
		return unclaimedEnd{e, runs.Missed, metrics.ReasonMissed,
			fmt.Sprintf("not started: %s late, and its job's tick at %s is due (catch_up: %s runs the newest)",
				now.Sub(at).Round(time.Millisecond), newer.UTC().Format(runs.TimeFormat), j.CatchUp)}, true
	}
	return unclaimedEnd{}, false
}

// superseded reports whether a run of j due at at is more than shedAfter
// late at now while j's next tick is due, under a catch_up that runs only
// the newest late tick (or none); and that tick.
func superseded(j *config.Job, at, now time.Time) (time.Time, bool) {
	if j.CatchUp == config.CatchUpAll || !now.After(at.Add(shedAfter)) {
		return time.Time{}, false
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return time.Time{}, false
	}
	next := sched.Next(at)
	return next, !next.IsZero() && !next.After(now)
}
