package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/wire"
)

// lastRunLookups bounds the per-job reads a job listing makes; a larger
// cluster lists jobs without their last run (ask for one job to see it).
const lastRunLookups = 500

// JobStatus is a job as the API shows it.
type JobStatus = wire.Job

// Notifications sums up the notifications not yet delivered, as this
// replica's view of the outbox has them: how many per sink, and when the
// oldest was created (zero when none waits).
func (e *Engine) Notifications() (bySink map[string]int, oldest time.Time) {
	return e.outbox.Backlog()
}

// Jobs lists the jobs of the current config: all of them in the file's
// order, or, with a limit, a page in name order after page.After. next is
// the cursor of the following page, empty on the last.
func (e *Engine) Jobs(ctx context.Context, page Page) (list []JobStatus, next string, err error) {
	cfg := e.opts.Config()
	jobs := make([]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		jobs[i] = &cfg.Jobs[i]
	}
	if page.Limit > 0 {
		slices.SortFunc(jobs, func(a, b *config.Job) int { return strings.Compare(a.Name, b.Name) })
		from, _ := slices.BinarySearchFunc(jobs, page.After, func(j *config.Job, name string) int {
			if j.Name <= name {
				return -1
			}
			return 1
		})
		jobs = jobs[from:]
		if len(jobs) > page.Limit {
			jobs = jobs[:page.Limit]
			next = jobs[len(jobs)-1].Name
		}
	}
	list, err = e.statuses(ctx, jobs)
	return list, next, err
}

// statuses are the jobs as the API shows them, with their last runs when
// there are few enough to read them.
func (e *Engine) statuses(ctx context.Context, jobs []*config.Job) ([]JobStatus, error) {
	counts := e.queued(nil)
	notes := e.outbox.ByJob()
	out := make([]JobStatus, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		out[i] = e.jobStatus(j, counts[j.Name], notes)
		if len(jobs) > lastRunLookups {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if out[i].LastRun, errs[i] = e.lastRun(ctx, j.Name); errs[i] != nil {
				return
			}
			errs[i] = e.withRemaining(ctx, j, &out[i])
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Job returns one job with its last run.
func (e *Engine) Job(ctx context.Context, name string) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, e.unknownJob(ctx, name)
	}
	st := e.jobStatus(j, e.queued(func(q *queue.Item) bool { return q.Job == j.Name })[j.Name], e.outbox.ByJob())
	var err error
	if st.LastRun, err = e.lastRun(ctx, name); err != nil {
		return st, err
	}
	return st, e.withRemaining(ctx, j, &st)
}

// remainingRuns is how many scheduled runs j's max_runs leaves, from the
// count the leaders keep (package leader, maxruns.go); nil without
// max_runs.
func (e *Engine) remainingRuns(ctx context.Context, j *config.Job) (*int, error) {
	if j.MaxRuns <= 0 {
		return nil, nil
	}
	resp, err := e.opts.Client.Get(ctx, e.keys.Scheduled(j.Name))
	if err != nil {
		return nil, fmt.Errorf("jobs: read the runs count of %s: %w", j.Name, err)
	}
	used := 0
	if len(resp.Kvs) > 0 {
		used, _ = strconv.Atoi(string(resp.Kvs[0].Value))
	}
	left := max(0, j.MaxRuns-used)
	return &left, nil
}

// queueCount is a job's pending entries: due, and queued ahead.
type queueCount struct{ due, ahead int }

// queued counts the pending entries that keep has (nil: all), by job.
func (e *Engine) queued(keep func(*queue.Item) bool) map[string]queueCount {
	now := e.clock.Now()
	out := map[string]queueCount{}
	e.queue.List(func(q *queue.Item) bool {
		if q.State != queue.Pending || (keep != nil && !keep(q)) {
			return false
		}
		c := out[q.Job]
		if q.NotBefore.After(now) {
			c.ahead++
		} else {
			c.due++
		}
		out[q.Job] = c
		return false
	})
	return out
}

func (e *Engine) jobStatus(j *config.Job, queued queueCount, notes map[string]int) JobStatus {
	pause := e.paused.State(j.Name, j.Paused)
	st := JobStatus{
		Name:           j.Name,
		Spec:           *j,
		Paused:         pause.Paused,
		PauseReason:    pause.Reason,
		PausedAt:       pause.At,
		PausedUntil:    pause.Until,
		Running:        e.opts.Slots.InUse(j.Name),
		MaxConcurrency: j.MaxConcurrency,
		Pending:        queued.due,
		Scheduled:      queued.ahead,
		After:          j.After,
	}
	st.PendingNotifications = notes[j.Name]
	isOverdue, last := e.overdue.Job(j.Name)
	st.Overdue, st.LastSucceededAt = isOverdue && j.OverdueAfter > 0, last
	if j.Sharded() {
		st.Shards = j.Shards
	}
	st.NextRun = e.nextRun(j, pause.Paused, pause.Until)
	return st
}

func (e *Engine) lastRun(ctx context.Context, job string) (*runs.Record, error) {
	recs, _, err := e.runPages().readRuns(ctx, job, Page{Limit: 1})
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &recs[0], nil
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

// withRemaining fills st's remaining_runs for a job with max_runs. With
// none left, the schedule stops (docs/configuration.md#jobs): the next run is then a
// tick materialized before the count ran out and still to come, or none.
func (e *Engine) withRemaining(ctx context.Context, j *config.Job, st *JobStatus) error {
	left, err := e.remainingRuns(ctx, j)
	if err != nil {
		return err
	}
	st.RemainingRuns = left
	if left != nil && *left == 0 {
		st.NextRun = e.queuedTick(j.Name)
	}
	return nil
}
