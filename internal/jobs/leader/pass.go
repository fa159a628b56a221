package leader

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// pass works on every job whose wake time has come, at most
// materializeParallelism at once. It holds the spec gate from building its
// first write to the answer to its last (specs.go). A failed look at a job
// is retried at its next wake (afterLook); only the end of the term ends
// the pass with an error.
func (l *leader) pass(ctx context.Context) error {
	l.book.gate.RLock()
	defer l.book.gate.RUnlock()
	// The pass's withdrawals share one read of the assignments, taken at
	// the first of them.
	l.assigns.snap.drop()
	now := l.d.Clock.Now()
	due, gone := l.popDue(now)
	lean, due := l.splitLean(due, now)
	batches, single := l.splitBatches(due, now)
	// done schedules j's next look after a pass over it.
	done := func(j *config.Job, next time.Time, err error) error {
		retry, passErr := l.afterLook(ctx, j.Name, err, "materializing ticks failed; retrying")
		if !retry.IsZero() {
			next = retry
		}
		if !next.IsZero() {
			l.mu.Lock()
			heap.Push(&l.wakes, wake{at: next, job: j.Name, gen: l.gen[j.Name]})
			l.mu.Unlock()
		}
		return passErr
	}
	// Removed jobs leave the assignments together: each job's own
	// withdrawal below then only moves its cursor. A failure here is
	// theirs to meet again and report.
	if err := l.assigns.takeOutGone(ctx, gone); errors.Is(err, errNotLeader) {
		return errNotLeader
	}
	var g errgroup.Group
	g.SetLimit(materializeParallelism)
	for _, w := range lean {
		g.Go(func() error { return l.passLean(ctx, w, done) })
	}
	for _, b := range batches {
		g.Go(func() error { return l.passBatch(ctx, b, done) })
	}
	for _, j := range single {
		g.Go(func() error {
			next, err := l.process(ctx, j)
			return done(j, next, err)
		})
	}
	for _, name := range gone {
		g.Go(func() error { return l.passGone(ctx, name) })
	}
	if errors.Is(g.Wait(), errNotLeader) {
		return errNotLeader
	}
	return nil
}

// popDue takes the wakes that have come: the jobs to look at, and the
// removed jobs whose ticks are to withdraw. Stale wakes (of an older
// generation of their job) are dropped.
func (l *leader) popDue(now time.Time) (due []*config.Job, gone []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.wakes) > 0 && !l.wakes[0].at.After(now) {
		w := heap.Pop(&l.wakes).(wake)
		if w.gen != l.gen[w.job] {
			continue
		}
		if j, ok := l.jobs[w.job]; ok {
			due = append(due, j)
		} else if g, ok := l.gone[w.job]; ok && g == w.gen {
			gone = append(gone, w.job)
		}
	}
	return due, gone
}

// afterLook is the bookkeeping of one look at a job: a success clears its
// failures in a row; a failure while the term holds is logged with msg and
// counted, and retry is when to look again (retry.go). It returns the
// error the pass must end with: errNotLeader only, as the other failures
// are retried.
func (l *leader) afterLook(ctx context.Context, job string, err error, msg string) (retry time.Time, passErr error) {
	switch {
	case err == nil:
		l.failures.passed(job)
		return time.Time{}, nil
	case errors.Is(err, errNotLeader):
		return time.Time{}, err
	case ctx.Err() != nil:
		return time.Time{}, nil
	}
	retry = l.failures.failed(job)
	l.d.Log.Warn(msg, "job", job, "err", err, "at", retry)
	return retry, nil
}

// passBatch writes a batch of jobs' ticks in one transaction; when a
// condition fails, each job alone finds out which.
func (l *leader) passBatch(ctx context.Context, b []batchItem, done lookDone) error {
	ok, err := l.ticks.writeBatch(ctx, b)
	if err != nil && !errors.Is(err, errNotLeader) && ctx.Err() == nil {
		l.d.Log.Warn("batched materialization failed; writing the jobs one by one", "jobs", len(b), "err", err)
	}
	var passErr error
	for _, it := range b {
		switch {
		case ok:
			passErr = errors.Join(passErr, done(it.job, nextWake(it.sched, it.plan.Cursor, it.la), nil))
		case errors.Is(err, errNotLeader):
			passErr = errors.Join(passErr, done(it.job, time.Time{}, err))
		default:
			// Some job's cursor moved or its run exists: each job
			// alone finds out which.
			next, err := l.process(ctx, it.job)
			passErr = errors.Join(passErr, done(it.job, next, err))
		}
	}
	return passErr
}

// passGone withdraws a removed job's ticks, looking again after a backoff
// when that fails.
func (l *leader) passGone(ctx context.Context, name string) error {
	err := l.withdrawer.removed(ctx, name)
	if err == nil {
		l.mu.Lock()
		delete(l.gone, name)
		l.mu.Unlock()
	}
	retry, passErr := l.afterLook(ctx, name, err, "withdrawing a removed job's ticks failed; retrying")
	if !retry.IsZero() {
		l.mu.Lock()
		if g, ok := l.gone[name]; ok {
			heap.Push(&l.wakes, wake{at: retry, job: name, gen: g})
		}
		l.mu.Unlock()
	}
	return passErr
}

// lookDone schedules a job's next look after a pass over it (next zero:
// none) and returns the error the pass must end with.
type lookDone func(j *config.Job, next time.Time, err error) error

// process writes the job's due ticks and returns when to look again.
func (l *leader) process(ctx context.Context, j *config.Job) (time.Time, error) {
	sched, err := j.ParsedSchedule()
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s: %w", j.Name, err)
	}
	for attempt := 0; ; attempt++ {
		la, err := l.processOnce(ctx, j, sched)
		if errors.Is(err, errCursorMoved) && attempt < 3 {
			continue
		}
		if err != nil {
			return time.Time{}, err
		}
		cursor, _ := l.cursors.get(j.Name)
		return nextWake(sched, cursor, la), nil
	}
}

// processOnce withdraws the job's materialized ticks when a change calls
// for it, then writes its ticks up to the lookahead it returns.
func (l *leader) processOnce(ctx context.Context, j *config.Job, sched schedule.Schedule) (time.Duration, error) {
	now := l.d.Clock.Now()
	paused := l.d.Paused.Is(j.Name, j.Paused)
	if err := l.sweepIfChanged(ctx, j.Name, paused, now); err != nil {
		return 0, err
	}
	cursor, known := l.cursors.get(j.Name) // zero when not known
	exhausted := l.cursors.exhausted(j)
	la := l.lookahead(sched, now, paused || exhausted)
	p := l.cursors.limitRuns(j, planTicks(j, sched, cursor, now, la))
	if !p.Cursor.After(cursor) && known {
		return la, nil
	}
	if p.keepFirst(farCap(p.Ticks, now.Add(l.near()))) {
		// Far ticks a few at a time: the rest at the next pass, a tick
		// later (nextWake with the lookahead cut here).
		la = p.Cursor.Sub(now)
	}
	if p.Dropped > 0 {
		l.d.Metrics.Skipped.WithLabelValues(j.Name, "missed").Add(float64(p.Dropped))
		l.d.Log.Warn("missed ticks not recorded individually", "job", j.Name, "count", p.Dropped)
	}
	if paused || exhausted {
		// The cursor follows the clock; the ticks are not counted as
		// skips, one a tick: the gauge scheduler_job_paused says why
		// nothing runs (docs/design-leader.md#a-pause-ends-at-its-until), remaining_runs 0 why a job
		// with max_runs stopped (and a max_runs raised later goes on
		// from then, not from its last run).
		_, err := l.ticks.write(ctx, j.Name, p.Cursor, nil, nil)
		return la, err
	}
	return la, l.writeTicks(ctx, j, p, now, cursor, known)
}

// sweepIfChanged withdraws the job's materialized ticks when a change
// called for it (syncJobs, syncPaused: withdraw.go).
func (l *leader) sweepIfChanged(ctx context.Context, job string, paused bool, now time.Time) error {
	l.mu.Lock()
	sweep := l.sweep[job]
	l.mu.Unlock()
	if !sweep {
		return nil
	}
	if err := l.withdrawer.job(ctx, job, paused, now); err != nil {
		return err
	}
	l.mu.Lock()
	delete(l.sweep, job)
	l.mu.Unlock()
	return nil
}

// writeTicks writes the planned ticks of j, many to a transaction where it
// can, then its cursor to the plan's. cursor and known are the cursor the
// plan started from.
func (l *leader) writeTicks(ctx context.Context, j *config.Job, p plan, now, cursor time.Time, known bool) error {
	cfg := l.d.Config()
	rest, err := l.writeChunks(ctx, j, cfg, p.Ticks, now, cursor, known)
	if err != nil {
		return err
	}
	for _, t := range rest {
		if j.Sharded() && (t.Action == queueTick || l.ticks.fannedOut(ctx, j.Name, t.At)) {
			if err := l.ticks.writeShards(ctx, cfg, j, t, now); err != nil {
				return err
			}
			continue
		}
		runID, ops, health := l.ticks.tickOps(cfg, j, t, now)
		n := runTicks([]plannedTick{t})
		wrote, err := l.ticks.write(ctx, j.Name, t.At, l.ticks.absent(j.Name, runID), append(append(ops, health...), l.cursors.countOps(j, n)...))
		if err != nil {
			return err
		}
		if wrote {
			l.ticks.countTick(j.Name, t)
			l.cursors.counted(j, n)
		}
	}
	stored, _ := l.cursors.get(j.Name)
	if p.Cursor.After(stored) {
		_, err := l.ticks.write(ctx, j.Name, p.Cursor, nil, nil)
		return err
	}
	return nil
}

// writeChunks writes ticks many to a transaction and returns those left
// for the one-tick writes. Many ticks at once (a new leader's first pass
// covers the gap since the old leader's cursor: five seconds of ticks at
// session_ttl 5s, 48 of a job @every 100ms) go many to a transaction, with
// the conditions of the one-tick writes; one at a time they saturated etcd
// for half a second and cost the benchmark's jobs a tick each. When a
// condition fails, the one-tick writes find out which.
func (l *leader) writeChunks(ctx context.Context, j *config.Job, cfg *config.Config, rest []plannedTick, now, cursor time.Time, known bool) ([]plannedTick, error) {
	for len(rest) > 1 && !j.Sharded() {
		it, n := l.ticks.chunk(j, cfg, rest, now, cursor, known)
		if n < 2 {
			break
		}
		ok, err := l.ticks.writeBatch(ctx, []batchItem{it})
		if err != nil {
			return rest, err
		}
		if !ok {
			break
		}
		rest = rest[n:]
		cursor, known = it.plan.Cursor, true
	}
	return rest, nil
}
