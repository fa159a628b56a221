package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

var (
	// ErrUnknownJob: no job of that name in the current config.
	ErrUnknownJob = errors.New("jobs: unknown job")
	// ErrUnknownRun: no queued, running or recorded run of that id.
	ErrUnknownRun = errors.New("jobs: unknown run")
	// ErrFinished: the run has a record already; there is nothing to cancel.
	ErrFinished = errors.New("jobs: run already finished")
)

// lastRunLookups bounds the per-job reads a job listing makes; a larger
// cluster lists jobs without their last run (ask for one job to see it).
const lastRunLookups = 500

// JobStatus is a job as the API shows it.
type JobStatus struct {
	Name           string       `json:"name"`
	Spec           config.Job   `json:"spec"`
	Paused         bool         `json:"paused"`
	NextRun        time.Time    `json:"next_run,omitzero"`
	LastRun        *runs.Record `json:"last_run,omitempty"`
	Running        int          `json:"running"`
	MaxConcurrency int          `json:"max_concurrency"`
	Pending        int          `json:"pending"`
}

// RunStatus is one run: queued ("pending"), executing ("running") or
// recorded ("finished").
type RunStatus struct {
	State string `json:"state"`
	runs.Record
}

// Jobs lists every job of the current config.
func (e *Engine) Jobs(ctx context.Context) ([]JobStatus, error) {
	cfg := e.opts.Config()
	pending := map[string]int{}
	for _, q := range e.queue.list(func(q *queued) bool { return q.State == Pending }) {
		pending[q.Job]++
	}
	out := make([]JobStatus, len(cfg.Jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, len(cfg.Jobs))
	for i := range cfg.Jobs {
		out[i] = e.jobStatus(&cfg.Jobs[i], pending[cfg.Jobs[i].Name])
		if len(cfg.Jobs) > lastRunLookups {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i].LastRun, errs[i] = e.lastRun(ctx, cfg.Jobs[i].Name)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Job returns one job with its last run.
func (e *Engine) Job(ctx context.Context, name string) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, fmt.Errorf("%w %q", ErrUnknownJob, name)
	}
	st := e.jobStatus(j, len(e.queue.list(func(q *queued) bool { return q.Job == j.Name && q.State == Pending })))
	var err error
	st.LastRun, err = e.lastRun(ctx, name)
	return st, err
}

func (e *Engine) jobStatus(j *config.Job, pending int) JobStatus {
	st := JobStatus{
		Name:           j.Name,
		Spec:           *j,
		Paused:         e.state.isPaused(j.Name, j.Paused),
		Running:        e.opts.Slots.InUse(j.Name),
		MaxConcurrency: j.MaxConcurrency,
		Pending:        pending,
	}
	if sched, err := j.ParsedSchedule(); err == nil {
		st.NextRun = sched.Next(e.clock.Now())
	}
	return st
}

func (e *Engine) lastRun(ctx context.Context, job string) (*runs.Record, error) {
	recs, err := e.readRuns(ctx, job, 1)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &recs[0], nil
}

// Runs returns the job's records, newest first.
func (e *Engine) Runs(ctx context.Context, job string, limit int) ([]runs.Record, error) {
	if e.opts.Config().Job(job) == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownJob, job)
	}
	return e.readRuns(ctx, job, limit)
}

// readRuns reads records without asking the current config: a listing made
// from one config must not fail because a reload removed a job meanwhile.
func (e *Engine) readRuns(ctx context.Context, job string, limit int) ([]runs.Record, error) {
	resp, err := e.opts.Client.Get(ctx, e.keys.JobRuns(job), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("jobs: read runs of %s: %w", job, err)
	}
	out := make([]runs.Record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r runs.Record
		if err := json.Unmarshal(kv.Value, &r); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// FindRun returns one run, queued, running or finished.
func (e *Engine) FindRun(ctx context.Context, runID string) (RunStatus, error) {
	job := runs.JobOf(runID)
	resp, err := e.opts.Client.Txn(ctx).Then(
		clientv3.OpGet(e.keys.Queue(job, runID)),
		clientv3.OpGet(e.keys.Record(job, runID)),
	).Commit()
	if err != nil {
		return RunStatus{}, fmt.Errorf("jobs: read run %s: %w", runID, err)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		q, err := decodeEntry(kvs[0].Value)
		if err != nil {
			return RunStatus{}, err
		}
		rec := q.record("")
		if q.State == Running {
			rec.FencingToken = kvs[0].ModRevision
			return RunStatus{State: "running", Record: rec}, nil
		}
		rec.Slot = -1
		return RunStatus{State: "pending", Record: rec}, nil
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		var r runs.Record
		if err := json.Unmarshal(kvs[0].Value, &r); err != nil {
			return RunStatus{}, fmt.Errorf("jobs: decode run %s: %w", runID, err)
		}
		return RunStatus{State: "finished", Record: r}, nil
	}
	return RunStatus{}, fmt.Errorf("%w %q", ErrUnknownRun, runID)
}

// Trigger queues a manual run now. It obeys max_concurrency and the overlap
// policy like a scheduled one.
func (e *Engine) Trigger(ctx context.Context, name string) (string, error) {
	cfg := e.opts.Config()
	j := cfg.Job(name)
	if j == nil {
		return "", fmt.Errorf("%w %q", ErrUnknownJob, name)
	}
	now := e.clock.Now()
	runID := runs.ManualID(name, ulid.Make().String())
	entry := newEntry(runID, j, cfg.Resources, now, now, 1, runs.Manual)
	key := e.keys.Queue(name, runID)
	_, err := e.opts.Client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, entry.encode())).Commit()
	if err != nil {
		return "", fmt.Errorf("jobs: trigger %s: %w", name, err)
	}
	e.log.Info("run triggered", "job", name, "run_id", runID)
	return runID, nil
}

// Pause stops the job being scheduled, cluster-wide, until Resume.
func (e *Engine) Pause(ctx context.Context, name string) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, fmt.Errorf("%w %q", ErrUnknownJob, name)
	}
	if _, err := e.opts.Client.Put(ctx, e.keys.Paused(name), "true"); err != nil {
		return JobStatus{}, fmt.Errorf("jobs: pause %s: %w", name, err)
	}
	return e.waitPaused(ctx, j, true)
}

// Resume schedules the job again from its next tick; ticks during the
// pause are not caught up.
func (e *Engine) Resume(ctx context.Context, name string) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, fmt.Errorf("%w %q", ErrUnknownJob, name)
	}
	var err error
	if j.Paused {
		_, err = e.opts.Client.Put(ctx, e.keys.Paused(name), "false")
	} else {
		_, err = e.opts.Client.Delete(ctx, e.keys.Paused(name))
	}
	if err != nil {
		return JobStatus{}, fmt.Errorf("jobs: resume %s: %w", name, err)
	}
	return e.waitPaused(ctx, j, false)
}

// waitPaused returns the job once this replica's view shows the change, so
// the answer agrees with what a following GET says.
func (e *Engine) waitPaused(ctx context.Context, j *config.Job, paused bool) (JobStatus, error) {
	for e.state.isPaused(j.Name, j.Paused) != paused {
		select {
		case <-ctx.Done():
			return JobStatus{}, ctx.Err()
		case <-e.state.Changed():
		}
	}
	return e.Job(ctx, j.Name)
}

// Cancel stops a run: a queued one is recorded cancelled at once, a running
// one is asked to stop through cancel/<run-id>.
func (e *Engine) Cancel(ctx context.Context, runID, reason string) error {
	st, err := e.FindRun(ctx, runID)
	if err != nil {
		return err
	}
	switch st.State {
	case "finished":
		return fmt.Errorf("%w: %s ended %s", ErrFinished, runID, st.Outcome)
	case "pending":
		q := e.queue.find(runID)
		if q == nil || q.State != Pending {
			return e.Cancel(ctx, runID, reason) // the view is behind: read again
		}
		rec := q.record(runs.Cancelled)
		rec.Slot = -1
		rec.EndedAt = e.clock.Now().UTC()
		rec.Error = "cancelled before it started: " + reason
		ok, err := e.worker.txnIfUnchanged(ctx, q, clientv3.OpDelete(q.Key),
			clientv3.OpPut(e.keys.Record(q.Job, q.RunID), encodeRecord(&rec)))
		if err != nil {
			return fmt.Errorf("jobs: cancel %s: %w", runID, err)
		}
		if !ok {
			return e.Cancel(ctx, runID, reason) // claimed meanwhile: cancel the running run
		}
		e.metrics.runs.WithLabelValues(q.Job, string(runs.Cancelled)).Inc()
		return nil
	default:
		sess, err := e.opts.Sessions.Current(ctx)
		if err != nil {
			return err
		}
		return e.worker.requestCancel(ctx, sess, runID, reason)
	}
}

// Pending lists queued and running runs, oldest first.
func (e *Engine) Pending() []RunStatus {
	var out []RunStatus
	for _, q := range e.queue.list(nil) {
		rec := q.record("")
		state := "pending"
		if q.State == Running {
			state = "running"
			rec.FencingToken = q.ModRev
		}
		out = append(out, RunStatus{State: state, Record: rec})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ScheduledAt.Before(out[j].ScheduledAt) })
	return out
}
