package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Trigger queues a manual run now with the job's default input. It obeys
// max_concurrency and the overlap policy like a scheduled one.
func (e *Engine) Trigger(ctx context.Context, name string) (string, error) {
	return e.TriggerWith(ctx, name, nil)
}

// TriggerWith queues a manual run now with input (a JSON document; nil
// means the job's default input). A run whose input renders no valid
// concurrency key is refused with ErrBadConcurrencyKey.
func (e *Engine) TriggerWith(ctx context.Context, name string, input json.RawMessage) (string, error) {
	cfg := e.opts.Config()
	j := cfg.Job(name)
	if j == nil {
		return "", fmt.Errorf("%w %q", ErrUnknownJob, name)
	}
	now := e.clock.Now()
	runID := runs.ManualID(name, ulid.Make().String())
	entry := queue.NewEntry(runID, j, cfg.Resources, now, now, 1, runs.Manual)
	if input != nil {
		entry.Input = input
	}
	if err := entry.RenderKey(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadConcurrencyKey, err)
	}
	if _, err := e.writes.Add(ctx, entry); err != nil {
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
	for e.paused.Is(j.Name, j.Paused) != paused {
		select {
		case <-ctx.Done():
			return JobStatus{}, ctx.Err()
		case <-e.paused.Changed():
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
		q := e.queue.Find(runID)
		if q == nil || q.State != queue.Pending {
			return e.Cancel(ctx, runID, reason) // the view is behind: read again
		}
		rec := q.NotStarted(runs.Cancelled, e.clock.Now(), "cancelled before it started: "+reason)
		ok, err := e.writes.EndUnstarted(ctx, q, queue.EncodeRecord(&rec))
		if err != nil {
			return fmt.Errorf("jobs: cancel %s: %w", runID, err)
		}
		if !ok {
			return e.Cancel(ctx, runID, reason) // claimed meanwhile: cancel the running run
		}
		e.metrics.Runs.WithLabelValues(q.Job, string(runs.Cancelled)).Inc()
		return nil
	default:
		sess, err := e.opts.Sessions.Current(ctx)
		if err != nil {
			return err
		}
		return e.writes.RequestCancel(ctx, sess.Lease(), runID, reason)
	}
}
