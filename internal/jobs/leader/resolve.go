package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/rendezvous"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Resolution of dead workers (docs/protocol.md, "Resolve a dead worker"):
// an incarnation whose member key is gone or on another lease leaves its
// assignments and claim markers behind. The leader turns each run they
// name into a lost record (claimed: it may have started; retried as the
// reaper's lost runs are), a move to a live worker (unclaimed, within its
// starting deadline) or a missed record (assign.Resolver.Resolve).
//
// It looks when a member's incarnation ends, at the start of its term
// (the previous leader may have died with work undone) and every session
// TTL (a change the members' mirror coalesced or missed while this
// replica did not lead).

// defaultResolveGap is the time between two looks when the config has no
// session TTL (tests).
const defaultResolveGap = 5 * time.Second

// resolver is the actor that resolves dead workers for one term. It
// shares the assignments with the withdrawals (withdraw_assigned.go): its
// moves keep apart from them, and drop their snapshot.
type resolver struct {
	*base
	txns    *assign.Resolver // nil: no resolution (no client)
	assigns *assignments
}

// Run resolves dead workers until ctx ends.
func (rv *resolver) Run(ctx context.Context) error {
	if rv.d.Workers == nil || rv.txns == nil {
		return nil
	}
	select {
	case <-rv.d.Workers.Ready():
	case <-ctx.Done():
		return nil
	}
	var timer clockwork.Timer // made after the first look
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := rv.once(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, errNotLeader) {
				return err
			}
			rv.d.Log.Warn("resolving dead workers' assignments failed; will try again", "err", err)
		}
		gap := rv.d.Config().Cluster.SessionTTL.D()
		if gap <= 0 {
			gap = defaultResolveGap
		}
		if timer == nil {
			timer = rv.d.Clock.NewTimer(gap)
		} else {
			timer.Reset(gap)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-rv.d.Workers.Changed():
		case <-timer.Chan():
		}
	}
}

// once lists, keys only, the workers that hold assignments or claim
// markers, and resolves those not alive; it stops at a lost fence.
func (rv *resolver) once(ctx context.Context) error {
	resp, err := rv.d.Client.Txn(ctx).Then(
		clientv3.OpGet(rv.d.Keys.Assignments(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(rv.d.Keys.Claimed(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return fmt.Errorf("leader: list assignments: %w", err)
	}
	var dead []string
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		if w, _, _, ok := rv.d.Keys.ParseAssignment(string(kv.Key)); ok && !rv.d.Workers.Alive(w) {
			dead = append(dead, w)
		}
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if w, _, _, _, ok := rv.d.Keys.ParseClaimMarker(string(kv.Key)); ok && !rv.d.Workers.Alive(w) {
			dead = append(dead, w)
		}
	}
	slices.Sort(dead)
	var errs error
	for _, w := range slices.Compact(dead) {
		// One worker's failure does not hold back the others'.
		if err := rv.worker(ctx, w); errors.Is(err, errNotLeader) {
			return err
		} else if err != nil {
			errs = errors.Join(errs, err)
		}
	}
	return errs
}

// worker resolves one dead worker and logs and counts what became
// of its runs. A worker found alive (the mirror was behind) is left.
func (rv *resolver) worker(ctx context.Context, worker string) error {
	rv.assigns.mu.Lock()
	done, err := rv.txns.Resolve(ctx, rv.fence, worker, rv.placement(worker))
	for _, r := range done {
		if r.To != "" {
			rv.assigns.snap.drop() // a new assignment: the withdrawals read again
			break
		}
	}
	rv.assigns.mu.Unlock()
	for _, r := range done {
		switch r.Outcome {
		case runs.Lost:
			rv.d.Metrics.Runs.WithLabelValues(r.Job, string(runs.Lost)).Inc()
			rv.d.Log.Warn("run lost: its worker died after claiming it", "job", r.Job, "run_id", r.RunID, "worker", worker)
		case runs.Missed:
			rv.d.Metrics.Runs.WithLabelValues(r.Job, string(runs.Missed)).Inc()
			rv.d.Metrics.Skipped.WithLabelValues(r.Job, "missed").Inc()
			rv.d.Log.Warn("run missed: its worker died before starting it and no live worker could start it in time", "job", r.Job, "run_id", r.RunID, "worker", worker)
		default:
			rv.d.Log.Info("run moved from a dead worker", "job", r.Job, "run_id", r.RunID, "worker", worker, "to", r.To)
		}
	}
	switch {
	case errors.Is(err, assign.ErrNotLeader):
		return errNotLeader
	case errors.Is(err, assign.ErrAlive):
		return nil
	case err != nil:
		return fmt.Errorf("leader: resolve worker %s: %w", worker, err)
	}
	return nil
}

// placement decides, for a dead worker's runs, their starting deadline
// (the job's as configured; none for a job no longer configured), their
// new worker (rendezvous over the live lean incarnations but the dead
// one) and what their lost or missed record causes.
func (rv *resolver) placement(dead string) assign.Placement {
	cfg := rv.d.Config()
	jobs := make(map[string]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		jobs[cfg.Jobs[i].Name] = &cfg.Jobs[i]
	}
	live, _ := rv.d.Workers.Lean()
	live = slices.DeleteFunc(live, func(w string) bool { return w == dead })
	return assign.Placement{
		StartingDeadline: func(job string) time.Duration {
			if j := jobs[job]; j != nil {
				return j.StartingDeadline.D()
			}
			return 0
		},
		Worker: func(job string, at time.Time) string { return rendezvous.Pick(live, runs.ID(job, at)) },
		Follow: func(rec *runs.Record) []clientv3.Op { return rv.follow(cfg, jobs[rec.Job], rec) },
	}
}

// follow is what a lost or missed record of an assigned run causes besides
// the record (which Resolve writes): follow.End's retry entry (lost is
// retryable), with its spec, or the notifications, chained runs and
// health of a final outcome. A job no longer configured gets none.
func (rv *resolver) follow(cfg *config.Config, j *config.Job, rec *runs.Record) []clientv3.Op {
	if j == nil {
		return nil
	}
	now := rv.d.Clock.Now()
	e := queue.NewEntry(rec.RunID, j, cfg.Resources, rec.ScheduledAt, rec.ScheduledAt, 1, runs.Schedule)
	ops, retry := follow.End(rv.d.Keys, cfg, "", e, rec, now)
	ops = ops[len(queue.RecordOps(rv.d.Keys, rec)):]
	if spec, ok := e.SpecOp(rv.d.Keys); ok && retry != nil {
		// The retry entry refers to the spec of today's config, which this
		// term may not have written.
		ops = append([]clientv3.Op{spec}, ops...)
	}
	return ops
}
