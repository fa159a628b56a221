package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/backfill"
)

// Backfill queues the job's ticks in [from, to) that no leader authorized,
// under their scheduled run ids (docs/operations.md#backfilling, package backfill).
func (e *Engine) Backfill(ctx context.Context, name string, from, to time.Time) (backfill.Result, error) {
	cfg := e.opts.Config()
	j := cfg.Job(name)
	if j == nil {
		return backfill.Result{}, e.runs.unknownJob(ctx, name)
	}
	b, err := backfill.New(e.opts.Client, e.keys, e.clock, e.log)
	if err != nil {
		return backfill.Result{}, fmt.Errorf("jobs: backfill %s: %w", name, err)
	}
	res, err := b.Run(ctx, backfill.Request{Job: j, Resources: cfg.Resources, From: from, To: to})
	var keyErr *config.KeyError
	if errors.As(err, &keyErr) {
		return res, fmt.Errorf("%w: %w", ErrBadConcurrencyKey, err)
	}
	return res, err
}
