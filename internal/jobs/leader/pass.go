package leader

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// pass works on every job whose wake time has come. It holds the spec
// gate from building its first write to the answer to its last (specs.go).
func (l *leader) pass(ctx context.Context) error {
	l.specGate.RLock()
	defer l.specGate.RUnlock()
	// The pass's withdrawals share one read of the assignments, taken at
	// the first of them.
	l.assignSnap.drop()
	now := l.d.Clock.Now()
	var due []*config.Job
	var gone []string
	l.mu.Lock()
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
	l.mu.Unlock()

	lean, due := l.splitLean(due, now)
	batches, single := l.splitBatches(due, now)
	sem := make(chan struct{}, materializeParallelism)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	// done schedules j's next look after a pass over it.
	done := func(j *config.Job, next time.Time, err error) {
		if err != nil {
			mu.Lock()
			firstErr = errors.Join(firstErr, err)
			mu.Unlock()
			if ctx.Err() == nil && !errors.Is(err, errNotLeader) {
				next = l.failedPass(j.Name)
				l.d.Log.Warn("materializing ticks failed; retrying", "job", j.Name, "err", err, "at", next)
			}
		}
		l.mu.Lock()
		if err == nil {
			delete(l.failures, j.Name)
		}
		if !next.IsZero() {
			heap.Push(&l.wakes, wake{at: next, job: j.Name, gen: l.gen[j.Name]})
		}
		l.mu.Unlock()
	}
	// spawn runs f with at most materializeParallelism at once.
	spawn := func(f func()) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f()
		}()
	}
	for _, w := range lean {
		spawn(func() { l.passLean(ctx, w, done) })
	}
	for _, b := range batches {
		spawn(func() {
			ok, err := l.writeBatch(ctx, b)
			if err != nil && !errors.Is(err, errNotLeader) && ctx.Err() == nil {
				l.d.Log.Warn("batched materialization failed; writing the jobs one by one", "jobs", len(b), "err", err)
			}
			for _, it := range b {
				switch {
				case ok:
					done(it.job, nextWake(it.sched, it.plan.Cursor, it.la), nil)
				case errors.Is(err, errNotLeader):
					done(it.job, time.Time{}, err)
				default:
					// Some job's cursor moved or its run exists: each
					// job alone finds out which.
					next, err := l.process(ctx, it.job)
					done(it.job, next, err)
				}
			}
		})
	}
	for _, j := range single {
		spawn(func() {
			next, err := l.process(ctx, j)
			done(j, next, err)
		})
	}
	for _, name := range gone {
		spawn(func() {
			err := l.withdrawGone(ctx, name)
			if err != nil && ctx.Err() == nil && !errors.Is(err, errNotLeader) {
				at := l.failedPass(name)
				l.d.Log.Warn("withdrawing a removed job's ticks failed; retrying", "job", name, "err", err, "at", at)
				l.mu.Lock()
				if g, ok := l.gone[name]; ok {
					heap.Push(&l.wakes, wake{at: at, job: name, gen: g})
				}
				l.mu.Unlock()
			}
			if err == nil {
				l.mu.Lock()
				delete(l.failures, name)
				l.mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if errors.Is(firstErr, errNotLeader) {
		return errNotLeader
	}
	return nil
}

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
		l.mu.Lock()
		cursor := l.cursors[j.Name]
		l.mu.Unlock()
		return nextWake(sched, cursor, la), nil
	}
}

// processOnce withdraws the job's materialized ticks when a change calls
// for it, then writes its ticks up to the lookahead it returns.
func (l *leader) processOnce(ctx context.Context, j *config.Job, sched schedule.Schedule) (time.Duration, error) {
	now := l.d.Clock.Now()
	paused := l.d.Paused.Is(j.Name, j.Paused)
	l.mu.Lock()
	sweep := l.sweep[j.Name]
	l.mu.Unlock()
	if sweep {
		if err := l.withdrawJob(ctx, j.Name, paused, now); err != nil {
			return 0, err
		}
		l.mu.Lock()
		delete(l.sweep, j.Name)
		l.mu.Unlock()
	}
	l.mu.Lock()
	cursor, known := l.cursors[j.Name] // zero when not known
	l.mu.Unlock()
	exhausted := l.exhausted(j)
	la := l.lookahead(sched, now, paused || exhausted)
	p := l.limitRuns(j, planTicks(j, sched, cursor, now, la))
	if !p.Cursor.After(cursor) && known {
		return la, nil
	}
	if n := farCap(p.Ticks, now.Add(min(NearLookahead, l.d.Lookahead))); n < len(p.Ticks) {
		// Far ticks a few at a time: the rest at the next pass, a tick
		// later (nextWake with the lookahead cut here).
		p.Ticks = p.Ticks[:n]
		p.Cursor = p.Ticks[n-1].At
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
		_, err := l.write(ctx, j.Name, p.Cursor, nil, nil)
		return la, err
	}
	cfg := l.d.Config()
	rest := p.Ticks
	// Many ticks at once (a new leader's first pass covers the gap since
	// the old leader's cursor: five seconds of ticks at session_ttl 5s,
	// 48 of a job @every 100ms) go many to a transaction, with the
	// conditions of the one-tick writes; one at a time they saturated
	// etcd for half a second and cost the benchmark's jobs a tick each.
	// When a condition fails, the one-tick writes below find out which.
	for len(rest) > 1 && !j.Sharded() {
		it, n := l.chunk(j, cfg, rest, now, cursor, known)
		if n < 2 {
			break
		}
		ok, err := l.writeBatch(ctx, []batchItem{it})
		if err != nil {
			return la, err
		}
		if !ok {
			break
		}
		rest = rest[n:]
		cursor, known = it.plan.Cursor, true
	}
	for _, t := range rest {
		if j.Sharded() && (t.Action == queueTick || l.fannedOut(ctx, j.Name, t.At)) {
			if err := l.writeShards(ctx, cfg, j, t, now); err != nil {
				return la, err
			}
			continue
		}
		runID, ops, health := l.tickOps(cfg, j, t, now)
		n := runTicks([]plannedTick{t})
		wrote, err := l.write(ctx, j.Name, t.At, l.absent(j.Name, runID), append(append(ops, health...), l.countOps(j, n)...))
		if err != nil {
			return la, err
		}
		if wrote {
			l.countTick(j.Name, t)
			l.counted(j, n)
		}
	}
	l.mu.Lock()
	stored := l.cursors[j.Name]
	l.mu.Unlock()
	if p.Cursor.After(stored) {
		_, err := l.write(ctx, j.Name, p.Cursor, nil, nil)
		return la, err
	}
	return la, nil
}
