package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
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
	for _, q := range e.queue.List(func(q *queue.Item) bool { return q.State == queue.Pending }) {
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
	st := e.jobStatus(j, len(e.queue.List(func(q *queue.Item) bool { return q.Job == j.Name && q.State == queue.Pending })))
	var err error
	st.LastRun, err = e.lastRun(ctx, name)
	return st, err
}

func (e *Engine) jobStatus(j *config.Job, pending int) JobStatus {
	st := JobStatus{
		Name:           j.Name,
		Spec:           *j,
		Paused:         e.paused.Is(j.Name, j.Paused),
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
		clientv3.OpGet(e.keys.Entry(job, runID)),
		clientv3.OpGet(e.keys.Record(job, runID)),
	).Commit()
	if err != nil {
		return RunStatus{}, fmt.Errorf("jobs: read run %s: %w", runID, err)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		q, err := queue.Decode(kvs[0].Value)
		if err != nil {
			return RunStatus{}, err
		}
		return RunStatus{State: string(q.State), Record: q.InFlight(kvs[0].ModRevision)}, nil
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

// Pending lists queued and running runs, oldest first.
func (e *Engine) Pending() []RunStatus {
	var out []RunStatus
	for _, q := range e.queue.List(nil) {
		out = append(out, RunStatus{State: string(q.State), Record: q.InFlight(q.Token())})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ScheduledAt.Before(out[j].ScheduledAt) })
	return out
}

// RateWindows are the rate windows of the current config: each job's own,
// then each resource's.
func (e *Engine) RateWindows() []slots.Rate {
	cfg := e.opts.Config()
	var out []slots.Rate
	for _, j := range cfg.Jobs {
		if j.Rate != nil {
			out = append(out, slots.Rate{Scope: keys.RateJob, Name: j.Name, Count: j.Rate.Count, Per: j.Rate.Per.D()})
		}
	}
	for _, r := range cfg.Resources {
		if r.Rate != nil {
			out = append(out, slots.Rate{Scope: keys.RateResource, Name: r.Name, Count: r.Rate.Count, Per: r.Rate.Per.D()})
		}
	}
	return out
}
