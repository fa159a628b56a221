//go:build unsafe_shedtwice

package worker

import (
	"context"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// shedTwice writes, after a chunk record, each of its ticks' records of
// their own too, with no compare. Test-only: the fault suite's positive
// control builds the scheduler with -tags unsafe_shedtwice to show that
// its checker finds a tick recorded both in a chunk record and alone
// (docs/design-shed.md, "Checks"). Never build a release with this tag.
func (a *assignedRunner) shedTwice(ctx context.Context, ends []unclaimedEnd) {
	for _, end := range ends {
		rec := end.entry.NotStarted(end.outcome, a.d.Clock.Now(), end.msg)
		if _, err := a.d.Client.Txn(ctx).Then(queue.RecordOps(a.d.Keys, &rec)...).Commit(); err != nil {
			a.d.Log.Warn("unsafe_shedtwice: a second record failed", "run_id", rec.RunID, "err", err)
		}
	}
}
