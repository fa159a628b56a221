package jobs

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

var (
	errNotLeader   = errors.New("jobs: not leader")
	errCursorMoved = errors.New("jobs: cursor moved")
)

// materializeParallelism bounds the jobs one leader pass works on at once:
// enough to keep etcd busy when many jobs share a tick, few enough not to
// swamp it.
const materializeParallelism = 32

// Lead does the leader's work while ctx lives: it materializes ticks,
// records runs whose holder died and prunes history. Every write it makes
// carries fence (election.Leadership.Fence), so a deposed leader's writes
// fail (SPEC rule 1). It returns when ctx ends or a write finds the fence
// gone.
func (e *Engine) Lead(ctx context.Context, fence clientv3.Cmp) error {
	pc := fence.GetCompare()
	cu, ok := pc.GetTargetUnion().(*pb.Compare_CreateRevision)
	if !ok {
		return errors.New("jobs: fence must compare a create revision")
	}
	l := &leader{e: e, fence: fence, fenceKey: string(pc.GetKey()), fenceRev: cu.CreateRevision,
		cursors: map[string]time.Time{}, gen: map[string]uint64{}}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	select {
	case <-e.queue.ready:
	case <-ctx.Done():
		return nil
	}
	if err := l.loadCursors(ctx); err != nil {
		return err
	}
	if err := l.initCursors(ctx); err != nil {
		if errors.Is(err, errNotLeader) || ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	for _, f := range []func(context.Context) error{l.reap, l.prune} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				cancel(err)
			}
		}()
	}
	err := l.loop(ctx)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if errors.Is(err, errNotLeader) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type leader struct {
	e        *Engine
	fence    clientv3.Cmp
	fenceKey string
	fenceRev int64

	mu      sync.Mutex
	cursors map[string]time.Time // as stored in etcd
	jobs    map[string]*config.Job
	gen     map[string]uint64 // bumped when a job changes; stale heap items are dropped
	wakes   wakeHeap
}

func (l *leader) loadCursors(ctx context.Context) error {
	resp, err := l.e.opts.Client.Get(ctx, l.e.keys.JobsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("jobs: read cursors: %w", err)
	}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), l.e.keys.JobsPrefix())
		if job, ok := strings.CutSuffix(rest, "/cursor"); ok {
			if t, err := time.Parse(runs.TimeFormat, string(kv.Value)); err == nil {
				l.cursors[job] = t
			}
		}
	}
	return nil
}

// cursorBatch: cursor puts per transaction, with their compares and the
// fence under etcd's default limit of 128 operations.
const cursorBatch = 60

// initCursors gives every job without a cursor one at now, many per
// transaction. A job needs a cursor from the moment a leader first sees it:
// without one, a tick that fell in a later leader gap would be
// indistinguishable from a tick before the job existed, and lost silently.
func (l *leader) initCursors(ctx context.Context) error {
	cfg := l.e.opts.Config()
	now := l.e.clock.Now().UTC()
	value := now.Format(runs.TimeFormat)
	var pending []string
	l.mu.Lock()
	for i := range cfg.Jobs {
		if _, ok := l.cursors[cfg.Jobs[i].Name]; !ok {
			pending = append(pending, cfg.Jobs[i].Name)
		}
	}
	l.mu.Unlock()
	for len(pending) > 0 {
		batch := pending[:min(len(pending), cursorBatch)]
		pending = pending[len(batch):]
		cmps := []clientv3.Cmp{l.fence}
		ops := make([]clientv3.Op, 0, len(batch))
		for _, job := range batch {
			key := l.e.keys.Cursor(job)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
			ops = append(ops, clientv3.OpPut(key, value))
		}
		resp, err := l.e.opts.Client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("jobs: initialize cursors: %w", err)
		}
		if resp.Succeeded {
			for _, job := range batch {
				l.setCursor(job, now)
			}
		}
		// Otherwise a cursor appeared meanwhile or the fence failed: the
		// per-job writes find out which and create the rest one by one.
	}
	return nil
}

// syncJobs takes the current config: new and changed jobs are planned at
// once, removed ones stop being scheduled (their runs in flight finish).
func (l *leader) syncJobs() {
	cfg := l.e.opts.Config()
	now := l.e.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	next := make(map[string]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		next[j.Name] = j
		if old, ok := l.jobs[j.Name]; ok && sameJob(old, j) {
			continue
		}
		l.gen[j.Name]++
		heap.Push(&l.wakes, wake{at: now, job: j.Name, gen: l.gen[j.Name]})
	}
	for name := range l.jobs {
		if _, ok := next[name]; !ok {
			l.gen[name]++
		}
	}
	l.jobs = next
}

func (l *leader) loop(ctx context.Context) error {
	l.syncJobs()
	timer := l.e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.mu.Lock()
		wait := time.Hour
		if len(l.wakes) > 0 {
			wait = max(l.wakes[0].at.Sub(l.e.clock.Now()), 0)
		}
		l.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-l.e.configChanged:
			l.syncJobs()
			continue
		case <-timer.Chan():
		}
		if err := l.pass(ctx); err != nil {
			return err
		}
	}
}

// pass works on every job whose wake time has come.
func (l *leader) pass(ctx context.Context) error {
	now := l.e.clock.Now()
	var due []*config.Job
	l.mu.Lock()
	for len(l.wakes) > 0 && !l.wakes[0].at.After(now) {
		w := heap.Pop(&l.wakes).(wake)
		if j, ok := l.jobs[w.job]; ok && w.gen == l.gen[w.job] {
			due = append(due, j)
		}
	}
	l.mu.Unlock()

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
				l.e.log.Warn("materializing ticks failed; retrying", "job", j.Name, "err", err)
				next = l.e.clock.Now().Add(500 * time.Millisecond)
			}
		}
		if !next.IsZero() {
			l.mu.Lock()
			heap.Push(&l.wakes, wake{at: next, job: j.Name, gen: l.gen[j.Name]})
			l.mu.Unlock()
		}
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
	for _, b := range batches {
		spawn(func() {
			ok, err := l.writeBatch(ctx, b)
			if err != nil && !errors.Is(err, errNotLeader) && ctx.Err() == nil {
				l.e.log.Warn("batched materialization failed; writing the jobs one by one", "jobs", len(b), "err", err)
			}
			for _, it := range b {
				switch {
				case ok:
					done(it.job, l.nextWake(it.sched, it.plan.Cursor), nil)
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
		err := l.processOnce(ctx, j, sched)
		if errors.Is(err, errCursorMoved) && attempt < 3 {
			continue
		}
		if err != nil {
			return time.Time{}, err
		}
		l.mu.Lock()
		cursor := l.cursors[j.Name]
		l.mu.Unlock()
		return l.nextWake(sched, cursor), nil
	}
}

func (l *leader) processOnce(ctx context.Context, j *config.Job, sched schedule.Schedule) error {
	now := l.e.clock.Now()
	l.mu.Lock()
	cursor, known := l.cursors[j.Name] // zero when not known
	l.mu.Unlock()
	p := planTicks(j, sched, cursor, now, l.e.opts.Lookahead)
	if !p.Cursor.After(cursor) && known {
		return nil
	}
	if p.Dropped > 0 {
		l.e.metrics.skipped.WithLabelValues(j.Name, "missed").Add(float64(p.Dropped))
		l.e.log.Warn("missed ticks not recorded individually", "job", j.Name, "count", p.Dropped)
	}
	if l.e.state.isPaused(j.Name, j.Paused) {
		l.e.metrics.skipped.WithLabelValues(j.Name, "paused").Add(float64(len(p.Ticks)))
		_, err := l.write(ctx, j.Name, p.Cursor, nil, nil)
		return err
	}
	cfg := l.e.opts.Config()
	for _, t := range p.Ticks {
		runID, op := l.tickOp(cfg, j, t, now)
		wrote, err := l.write(ctx, j.Name, t.At, l.absent(j.Name, runID), []clientv3.Op{op})
		if err != nil {
			return err
		}
		if wrote {
			l.countTick(j.Name, t)
		}
	}
	l.mu.Lock()
	stored := l.cursors[j.Name]
	l.mu.Unlock()
	if p.Cursor.After(stored) {
		_, err := l.write(ctx, j.Name, p.Cursor, nil, nil)
		return err
	}
	return nil
}

// write moves the job's cursor to at, with ops, in one fenced transaction:
// If(fence, cursor as we know it, conds...) Then(ops..., cursor = at). It
// reports whether ops were applied; when only conds failed (the run exists
// already: a tick is never materialized twice, SPEC rule 2) it moves the
// cursor alone.
func (l *leader) write(ctx context.Context, job string, at time.Time, conds []clientv3.Cmp, ops []clientv3.Op) (bool, error) {
	ckey := l.e.keys.Cursor(job)
	l.mu.Lock()
	known, ok := l.cursors[job]
	l.mu.Unlock()
	cursorCmp := l.cursorIs(job, known, ok)
	cmps := append([]clientv3.Cmp{l.fence, cursorCmp}, conds...)
	then := append(ops, clientv3.OpPut(ckey, at.UTC().Format(runs.TimeFormat)))
	resp, err := l.e.opts.Client.Txn(ctx).If(cmps...).Then(then...).
		Else(clientv3.OpGet(l.fenceKey), clientv3.OpGet(ckey)).Commit()
	if err != nil {
		return false, fmt.Errorf("jobs: materialize %s: %w", job, err)
	}
	if resp.Succeeded {
		l.setCursor(job, at)
		return true, nil
	}
	if l.fenceGone(resp) {
		return false, errNotLeader
	}
	cursorKVs := resp.Responses[1].GetResponseRange().Kvs
	var stored time.Time
	storedOK := len(cursorKVs) > 0
	if storedOK {
		stored, _ = time.Parse(runs.TimeFormat, string(cursorKVs[0].Value))
	}
	if storedOK != ok || !stored.Equal(known) {
		l.mu.Lock()
		if storedOK {
			l.cursors[job] = stored
		} else {
			delete(l.cursors, job)
		}
		l.mu.Unlock()
		return false, errCursorMoved
	}
	if len(conds) == 0 {
		return false, fmt.Errorf("jobs: cursor write for %s failed for no known reason", job)
	}
	_, err = l.write(ctx, job, at, nil, nil)
	return false, err
}

// fenceGone reports, from a fenced transaction that failed and whose Else
// began with a read of the election key, whether the fence is what failed:
// the key is gone or belongs to another term.
func (l *leader) fenceGone(resp *clientv3.TxnResponse) bool {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	return len(kvs) == 0 || kvs[0].CreateRevision != l.fenceRev
}

func (l *leader) setCursor(job string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.After(l.cursors[job]) {
		l.cursors[job] = at
	}
}

// sameJob: a changed job is replanned at once.
func sameJob(a, b *config.Job) bool {
	return encodeJob(a) == encodeJob(b)
}

type wake struct {
	at  time.Time
	job string
	gen uint64
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
