package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// TriggerRequest is what a trigger may carry (docs/api.md).
type TriggerRequest struct {
	// Input, a JSON object, replaces the job's default input.
	Input json.RawMessage
	// IdempotencyKey names the run: a second trigger with the same key,
	// while the run is pending, running or in history, creates nothing.
	IdempotencyKey string
}

// Trigger queues a manual run now. It obeys max_concurrency and the overlap
// policy like a scheduled one. duplicate is true when the request's
// idempotency key names a run that exists: runID is that run's.
func (e *Engine) Trigger(ctx context.Context, name string, req TriggerRequest) (runID string, duplicate bool, err error) {
	cfg := e.opts.Config()
	j := cfg.Job(name)
	if j == nil {
		return "", false, e.runs.unknownJob(ctx, name)
	}
	now := e.clock.Now()
	runID = runs.ManualID(name, ulid.Make().String())
	if req.IdempotencyKey != "" {
		runID = runs.IdempotentID(name, req.IdempotencyKey)
	}
	entry := queue.NewEntry(runID, j, cfg.Resources, now, now, 1, runs.Manual)
	if len(req.Input) > 0 {
		entry.Input = req.Input
	}
	if err := entry.RenderKey(); err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrBadConcurrencyKey, err)
	}
	created, err := e.writes.Add(ctx, entry)
	if err != nil {
		return "", false, fmt.Errorf("jobs: trigger %s: %w", name, err)
	}
	if !created {
		e.log.Info("duplicate trigger: the run exists", "job", name, "run_id", runID)
		return runID, true, nil
	}
	e.log.Info("run triggered", "job", name, "run_id", runID)
	return runID, false, nil
}

// PauseRequest is what a pause may carry (docs/design-leader.md#a-pause-ends-at-its-until).
type PauseRequest struct {
	// Reason is shown with the job while it is paused.
	Reason string
	// Until, when set, ends the pause by itself; it must be in the future.
	Until time.Time
}

// MaxPauseReason bounds a pause's reason, in bytes.
const MaxPauseReason = 500

// Pause stops the job being scheduled, cluster-wide, until Resume or
// req.Until. Pausing a paused job replaces its reason and until.
func (e *Engine) Pause(ctx context.Context, name string, req PauseRequest) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, e.runs.unknownJob(ctx, name)
	}
	now := e.clock.Now()
	if !req.Until.IsZero() && !req.Until.After(now) {
		return JobStatus{}, fmt.Errorf("%w: job %q: until %s is not in the future (now %s): give a later time, or resume the job instead",
			ErrBadPause, name, req.Until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if len(req.Reason) > MaxPauseReason {
		return JobStatus{}, fmt.Errorf("%w: job %q: the pause reason is %d bytes; shorten it to at most %d", ErrBadPause, name, len(req.Reason), MaxPauseReason)
	}
	p := pause.Marker{Reason: req.Reason, At: now.UTC(), Until: req.Until.UTC()}
	put, err := e.opts.Client.Put(ctx, e.keys.Paused(name), pause.Encode(p))
	if err != nil {
		return JobStatus{}, fmt.Errorf("jobs: pause %s: %w", name, err)
	}
	e.log.Info("job paused", "job", name, "reason", req.Reason, "until", p.Until)
	return e.waitPaused(ctx, j, put.Header.Revision)
}

// Resume schedules the job again from its next tick; ticks during the
// pause are not caught up.
func (e *Engine) Resume(ctx context.Context, name string) (JobStatus, error) {
	j := e.opts.Config().Job(name)
	if j == nil {
		return JobStatus{}, e.runs.unknownJob(ctx, name)
	}
	var rev int64
	if j.Paused {
		put, err := e.opts.Client.Put(ctx, e.keys.Paused(name), pause.Resumed)
		if err != nil {
			return JobStatus{}, fmt.Errorf("jobs: resume %s: %w", name, err)
		}
		rev = put.Header.Revision
	} else {
		del, err := e.opts.Client.Delete(ctx, e.keys.Paused(name))
		if err != nil {
			return JobStatus{}, fmt.Errorf("jobs: resume %s: %w", name, err)
		}
		if del.Deleted == 0 {
			return e.Job(ctx, name) // not paused: nothing changed to wait for
		}
		rev = del.Header.Revision
	}
	return e.waitPaused(ctx, j, rev)
}

// waitPaused returns the job once this replica's view shows the change
// written at rev, so the answer agrees with what a following GET says.
func (e *Engine) waitPaused(ctx context.Context, j *config.Job, rev int64) (JobStatus, error) {
	for {
		changed := e.paused.Changed()
		if e.paused.Seen(rev) {
			return e.Job(ctx, j.Name)
		}
		select {
		case <-ctx.Done():
			return JobStatus{}, ctx.Err()
		case <-changed:
		}
	}
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
		return refuse(ErrFinished, "run %q already finished (%s); there is nothing to cancel", runID, st.Outcome)
	case "pending":
		q := e.queue.Find(runID)
		if q == nil || q.State != queue.Pending {
			return e.Cancel(ctx, runID, reason) // the view is behind: read again
		}
		if r, err := e.specs.Resolve(ctx, q); err == nil {
			q = r // what its end causes, when the job left the config, follows from its spec
		}
		rec := q.NotStarted(runs.Cancelled, e.clock.Now(), "cancelled before it started: "+reason)
		ok, err := e.writes.IfUnchanged(ctx, q, follow.Unstarted(e.keys, e.opts.Config(), q, &rec)...)
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
