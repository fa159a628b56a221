package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/outbox"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/wire"
)

// scrapeRead bounds the read of the last successes a scrape makes; past
// it the gauges show them as last read.
const scrapeRead = 2 * time.Second

// lastRunLookups bounds the per-job reads a job listing makes; a larger
// cluster lists jobs without their last run (ask for one job to see it).
const lastRunLookups = 500

// JobStatus is a job as the API shows it.
type JobStatus = wire.Job

// jobReader is the read side of jobs, as the API shows them: each job of
// the current config with its pause, its queued and running runs, its next
// run (nextrun.go), its last run and what its max_runs leave, and the
// rate windows and notification backlog beside them. It owns no state of
// its own: it reads the views the engine mirrors (queue entries, pauses,
// the outbox, held slots) and, for the last runs and the runs counts,
// etcd; it writes nothing.
type jobReader struct {
	kv     clientv3.KV
	keys   keys.Layout
	config func() *config.Config
	clock  clockwork.Clock
	queue  *queue.View
	paused *pause.View
	outbox *outbox.View
	slots  *slots.Semaphore
	runs   *runReader    // last runs, and the refusal of an unknown job
	late   *overdue.View // overdue states
	lasts  *overdue.Last // last successes
}

// Notifications sums up the notifications not yet delivered, as this
// replica's view of the outbox has them: how many per sink, and when the
// oldest was created (zero when none waits).
func (jr *jobReader) Notifications() (bySink map[string]int, oldest time.Time) {
	return jr.outbox.Backlog()
}

// Jobs lists the jobs of the current config: all of them in the file's
// order, or, with a limit, a page in name order after page.After. next is
// the cursor of the following page, empty on the last.
func (jr *jobReader) Jobs(ctx context.Context, page Page) (list []JobStatus, next string, err error) {
	cfg := jr.config()
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
	list, err = jr.statuses(ctx, jobs)
	return list, next, err
}

// statuses are the jobs as the API shows them, with their last runs when
// there are few enough to read them.
func (jr *jobReader) statuses(ctx context.Context, jobs []*config.Job) ([]JobStatus, error) {
	counts := jr.queued(nil)
	notes := jr.outbox.ByJob()
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	lasts, err := jr.lasts.Of(ctx, names...)
	if lasts == nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	running, err := jr.slots.Running(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	out := make([]JobStatus, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		out[i] = jr.jobStatus(j, counts[j.Name], running[j.Name], notes, lasts(j.Name))
		if len(jobs) > lastRunLookups {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if out[i].LastRun, errs[i] = jr.runs.lastRun(ctx, j.Name); errs[i] != nil {
				return
			}
			errs[i] = jr.withRemaining(ctx, j, &out[i])
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Job returns one job with its last run.
func (jr *jobReader) Job(ctx context.Context, name string) (JobStatus, error) {
	j := jr.config().Job(name)
	if j == nil {
		return JobStatus{}, jr.runs.unknownJob(ctx, name)
	}
	lasts, err := jr.lasts.Of(ctx, name)
	if err != nil {
		return JobStatus{}, fmt.Errorf("jobs: %w", err)
	}
	running, err := jr.slots.Running(ctx, name)
	if err != nil {
		return JobStatus{}, fmt.Errorf("jobs: %w", err)
	}
	st := jr.jobStatus(j, jr.queued(func(q *queue.Item) bool { return q.Job == j.Name })[j.Name], running[name], jr.outbox.ByJob(), lasts(name))
	if st.LastRun, err = jr.runs.lastRun(ctx, name); err != nil {
		return st, err
	}
	return st, jr.withRemaining(ctx, j, &st)
}

// remainingRuns is how many scheduled runs j's max_runs leaves, from the
// count the leaders keep (package leader, maxruns.go); nil without
// max_runs.
func (jr *jobReader) remainingRuns(ctx context.Context, j *config.Job) (*int, error) {
	if j.MaxRuns <= 0 {
		return nil, nil
	}
	resp, err := jr.kv.Get(ctx, jr.keys.Scheduled(j.Name))
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
func (jr *jobReader) queued(keep func(*queue.Item) bool) map[string]queueCount {
	now := jr.clock.Now()
	out := map[string]queueCount{}
	jr.queue.List(func(q *queue.Item) bool {
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

func (jr *jobReader) jobStatus(j *config.Job, queued queueCount, running int, notes map[string]int, last *overdue.Succeeded) JobStatus {
	pause := jr.paused.State(j.Name, j.Paused)
	st := JobStatus{
		Name:           j.Name,
		Spec:           *j,
		Paused:         pause.Paused,
		PauseReason:    pause.Reason,
		PausedAt:       pause.At,
		PausedUntil:    pause.Until,
		Running:        running,
		MaxConcurrency: j.MaxConcurrency,
		Pending:        queued.due,
		Scheduled:      queued.ahead,
		After:          j.After,
	}
	st.PendingNotifications = notes[j.Name]
	isOverdue, lastAt := jr.late.Job(j.Name, last)
	st.Overdue, st.LastSucceededAt = isOverdue && j.OverdueAfter > 0, lastAt
	if j.Sharded() {
		st.Shards = j.Shards
	}
	st.NextRun = jr.nextRun(j, pause.Paused, pause.Until)
	return st
}

// RateWindows are the rate windows of the current config: each job's own,
// then each resource's.
func (jr *jobReader) RateWindows() []slots.Rate {
	cfg := jr.config()
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
func (jr *jobReader) withRemaining(ctx context.Context, j *config.Job, st *JobStatus) error {
	left, err := jr.remainingRuns(ctx, j)
	if err != nil {
		return err
	}
	st.RemainingRuns = left
	if left != nil && *left == 0 {
		st.NextRun = jr.queuedTick(j.Name)
	}
	return nil
}

// pausedJobs is each configured job's pause state, for the gauge.
func (jr *jobReader) pausedJobs() map[string]bool {
	cfg := jr.config()
	out := make(map[string]bool, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		out[j.Name] = jr.paused.Is(j.Name, j.Paused)
	}
	return out
}

// overdueJobs is each configured job's overdue state and last success,
// as etcd stores them, for the gauges: the last successes read at the
// scrape, or while etcd does not answer, as last read (overdue.Last.All).
func (jr *jobReader) overdueJobs() map[string]metrics.JobOverdue {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeRead)
	defer cancel()
	lasts, _ := jr.lasts.All(ctx)
	cfg := jr.config()
	out := make(map[string]metrics.JobOverdue, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		isOverdue, last := jr.late.Job(j.Name, lasts(j.Name))
		out[j.Name] = metrics.JobOverdue{Watched: j.OverdueAfter > 0, Overdue: isOverdue && j.OverdueAfter > 0, LastSucceeded: last}
	}
	return out
}
