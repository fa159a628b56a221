package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/admission"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// Assigned ticks: the lean run protocol (docs/protocol.md). While every
// member runs it, a job whose ticks need no waiting has them authorized
// as assignments (assign.Store.Authorize: the cursors and one assignment
// per worker, instant and group of jobs, fenced, in one transaction)
// instead of one queue entry each. The cursor keeps its meaning for both
// paths, so a tick is authorized or materialized once, whichever path a
// pass takes.

const (
	// leanJobsPerAssignment bounds an assignment's jobs: a worker claims
	// them in chunks of up to 40 runs, and a backup takes the assignment
	// over in one transaction (assign.MaxTakeOverJobs: 41).
	leanJobsPerAssignment = 40
	// leanWindowCost bounds a window's cursors and assignments, so that
	// with the fence it is one transaction under etcd's default
	// --max-txn-ops, and a conflict fails no other window.
	leanWindowCost = assign.DefaultMaxTxnOps - 1
	// leanMaxTicks bounds the ticks of one job a pass assigns (fewer
	// beyond NearLookahead: farCap); the rest are assigned in the next.
	// A new leader after a SIGKILL finds each job a session TTL of ticks
	// behind its lookahead (50 of a job @every 100ms): sent to the queue
	// path, they were entries waiting until their instants, and every
	// assigned run of the job meanwhile followed them there (its claim
	// compares that none waits), where two ticks, ranked apart, ran out
	// of order and the older was skipped.
	leanMaxTicks = 32
)

// leanItem is a job whose ticks of this pass are assigned.
type leanItem struct {
	job     *config.Job
	sched   schedule.Schedule
	known   time.Time // the cursor as stored; zero when the job has none
	la      time.Duration
	plan    plan
	specRef string
	specKey string
	// specOp writes the job's spec with its cursor, when this term has
	// not written it yet.
	specOp []clientv3.Op
}

// leanItem returns j's item when this pass assigns its ticks: its runs
// need nothing the lean claim does not compare (admission.Of), it is neither paused nor swept, and every tick is on time
// (planned to run, not caught up, no jitter). Its spec goes with its
// cursor when this term has not written it yet.
func (l *leader) leanItem(cfg *config.Config, j *config.Job, now time.Time, b leanBatch) (leanItem, bool) {
	sched, err := j.ParsedSchedule()
	if err != nil || !admission.Of(j, cfg.Resources).Lean() {
		return leanItem{}, false
	}
	cursor, _ := l.cursors.get(j.Name)
	l.mu.Lock()
	sweep := l.sweep[j.Name]
	l.mu.Unlock()
	if sweep || l.d.Paused.Is(j.Name, j.Paused) {
		return leanItem{}, false
	}
	la := l.lookahead(sched, now, false)
	p := planTicks(j, sched, cursor, now, leanHorizon(sched, now, la, l.near(), b, now.Before(l.born.Add(l.d.Lookahead))))
	if p.Dropped > 0 || len(p.Ticks) == 0 || !p.Cursor.Equal(p.Ticks[len(p.Ticks)-1].At) {
		return leanItem{}, false
	}
	// A pass bounded as the queue path's is (farCap), and by a window's
	// cost; the rest in the next passes, at once (nextWake is past).
	p.keepFirst(min(farCap(p.Ticks, now.Add(l.near())), leanMaxTicks))
	for _, t := range p.Ticks {
		if t.Action != queueTick || t.CatchUp || !t.NotBefore.Equal(t.At) {
			return leanItem{}, false
		}
	}
	e := l.specEntries.of(cfg, j, p.Ticks[0].At)
	key := e.SpecKey(l.d.Keys)
	if key == "" {
		return leanItem{}, false
	}
	it := leanItem{job: j, sched: sched, known: cursor, la: la, plan: p, specRef: e.SpecRef, specKey: key}
	if !l.book.isWritten(key) {
		// Written with the cursor: a job's first ticks of a term do not
		// take the queue path (thousands of new jobs at once flooded it,
		// and every later tick of a job with an entry waiting followed).
		op, ok := e.SpecOp(l.d.Keys)
		if !ok {
			return leanItem{}, false
		}
		it.specOp = []clientv3.Op{op}
	}
	return it, true
}

// authorize writes one window. The jobs of applied parts have their
// cursors moved and their ticks counted; a conflict re-reads the cursors
// of the jobs not applied (one read), so the next pass plans them from
// what is stored. applied tells which jobs were written.
func (l *leader) authorize(ctx context.Context, win leanWin) (applied map[string]bool, err error) {
	items := win.items
	live, ok := l.d.Workers.Lean()
	if !ok {
		return nil, fmt.Errorf("leader: assign %d jobs: a member left the lean protocol meanwhile: %w", len(items), assign.ErrConflict)
	}
	// The window's workers that are still live members: a window planned
	// for one that left since goes to the others.
	sets := win.workers.sets.among(live)
	if sets == nil {
		return nil, fmt.Errorf("leader: assign %d jobs: every worker planned for them left meanwhile: %w", len(items), assign.ErrConflict)
	}
	parts, err := l.store.Authorize(ctx, l.fence, leanWindow(items, tickWorkers{sets, win.workers.turn}))
	applied = map[string]bool{}
	for _, p := range parts {
		for _, job := range p.Jobs {
			applied[job] = p.Applied
		}
	}
	var failed []string
	for _, it := range items {
		if !applied[it.job.Name] {
			failed = append(failed, it.job.Name)
			continue
		}
		l.cursors.forward(it.job.Name, it.plan.Cursor)
		l.book.wrote(it.specOp)
		l.book.assign(it.specKey, it.plan.Cursor)
		for _, t := range it.plan.Ticks {
			l.ticks.countTick(it.job.Name, t)
			// No queue entry's delete will tell the pruner this run ended.
			l.d.Finished.Note(it.job.Name)
		}
	}
	switch {
	case err == nil:
		return applied, nil
	case errors.Is(err, assign.ErrNotLeader):
		return applied, errNotLeader
	case errors.Is(err, assign.ErrConflict):
		if rerr := l.refreshCursors(ctx, failed); rerr != nil {
			return applied, errors.Join(err, rerr)
		}
	}
	return applied, fmt.Errorf("leader: assign jobs %v: %w", failed, err)
}

// refreshCursors reads jobs' cursors as stored, in transactions of
// cursorBatch reads.
func (l *leader) refreshCursors(ctx context.Context, jobs []string) error {
	for len(jobs) > 0 {
		batch := jobs[:min(len(jobs), cursorBatch)]
		jobs = jobs[len(batch):]
		gets := make([]clientv3.Op, len(batch))
		for i, job := range batch {
			gets[i] = clientv3.OpGet(l.d.Keys.Cursor(job))
		}
		resp, err := l.d.Client.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return fmt.Errorf("leader: read cursors of %v: %w", batch, err)
		}
		for i, job := range batch {
			kvs := resp.Responses[i].GetResponseRange().Kvs
			if len(kvs) == 0 {
				l.cursors.set(job, time.Time{}, false)
				continue
			}
			if t, err := queue.DecodeCursor(kvs[0].Value); err == nil {
				l.cursors.set(job, t, true)
			}
		}
	}
	return nil
}

// passLean authorizes one window and schedules each job's next look:
// after its new cursor when written; half a second later, planned afresh
// from the cursors a conflict re-read, when not; never once the term is
// over.
func (l *leader) passLean(ctx context.Context, win leanWin, done lookDone) error {
	items := win.items
	began := l.d.Clock.Now()
	applied, err := l.authorize(ctx, win)
	l.d.Log.Debug("lean window written", "jobs", len(items), "took", l.d.Clock.Since(began))
	if err != nil && !errors.Is(err, errNotLeader) && ctx.Err() == nil {
		l.d.Log.Warn("assigning ticks failed; planning the jobs again", "jobs", len(items), "err", err)
	}
	retry := l.d.Clock.Now().Add(passRetry.Delay(1))
	var passErr error
	for _, it := range items {
		switch {
		case applied[it.job.Name]:
			passErr = errors.Join(passErr, done(it.job, nextWake(it.sched, it.plan.Cursor, it.la), nil))
		case errors.Is(err, errNotLeader) || ctx.Err() != nil:
			passErr = errors.Join(passErr, done(it.job, time.Time{}, err))
		default:
			passErr = errors.Join(passErr, done(it.job, retry, nil))
		}
	}
	return passErr
}
