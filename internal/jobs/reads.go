package jobs

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// The reads the API serves (internal/api's Cluster) are the readers'
// (jobReader in status.go, runReader in runs.go); the engine passes them
// on, so the API keeps one value to ask.

// Jobs lists the jobs of the current config: all of them in the file's
// order, or, with a limit, a page in name order after page.After. next is
// the cursor of the following page, empty on the last.
func (e *Engine) Jobs(ctx context.Context, page Page) (list []JobStatus, next string, err error) {
	return e.jobs.Jobs(ctx, page)
}

// Job returns one job with its last run.
func (e *Engine) Job(ctx context.Context, name string) (JobStatus, error) {
	return e.jobs.Job(ctx, name)
}

// RateWindows are the rate windows of the current config: each job's own,
// then each resource's.
func (e *Engine) RateWindows() []slots.Rate { return e.jobs.RateWindows() }

// Notifications sums up the notifications not yet delivered, as this
// replica's view of the outbox has them: how many per sink, and when the
// oldest was created (zero when none waits).
func (e *Engine) Notifications() (bySink map[string]int, oldest time.Time) {
	return e.jobs.Notifications()
}

// Runs returns the job's records, newest first, a page at a time
// (runReader.Runs).
func (e *Engine) Runs(ctx context.Context, job string, page Page) (list []runs.Record, next string, err error) {
	return e.runs.Runs(ctx, job, page)
}

// FindRun returns one run, queued, running or finished.
func (e *Engine) FindRun(ctx context.Context, runID string) (RunStatus, error) {
	return e.runs.FindRun(ctx, runID)
}

// Pending lists queued and running runs, oldest first.
func (e *Engine) Pending() []RunStatus { return e.runs.Pending() }

// RemovedJobs lists the removed jobs whose history is kept, by name
// (runReader.RemovedJobs).
func (e *Engine) RemovedJobs(ctx context.Context) ([]RemovedJob, error) {
	return e.runs.RemovedJobs(ctx)
}
