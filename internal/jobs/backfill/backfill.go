package backfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Backfiller queues past ticks under one prefix.
type Backfiller struct {
	kv    clientv3.KV
	keys  keys.Layout
	clock clockwork.Clock
	log   *slog.Logger
}

// New is a Backfiller writing through kv under layout; clock says what is
// past.
func New(kv clientv3.KV, layout keys.Layout, clock clockwork.Clock, log *slog.Logger) (*Backfiller, error) {
	switch {
	case kv == nil:
		return nil, errors.New("backfill: New needs an etcd KV")
	case layout.Prefix == "":
		return nil, errors.New("backfill: New needs a key prefix")
	case clock == nil:
		return nil, errors.New("backfill: New needs a clock")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backfiller{kv: kv, keys: layout, clock: clock, log: log}, nil
}

// Request is one backfill: the job as configured, the limits its
// resources have, and the range [From, To).
type Request struct {
	Job       *config.Job
	Resources []config.Resource
	From, To  time.Time
}

// Result says what became of every tick of the range, by run id.
type Result = wire.Backfill

// Run checks the request, reads the job's state at one revision and queues
// the ticks never authorized.
func (b *Backfiller) Run(ctx context.Context, req Request) (Result, error) {
	j := req.Job
	ts, err := b.ticks(req)
	if err != nil {
		return Result{}, err
	}
	res := Result{Job: j.Name, From: req.From.UTC(), To: req.To.UTC(), Queued: []string{}, SkippedExisting: []string{}, LeftToSchedule: []string{}}
	if len(ts) == 0 {
		return res, nil
	}
	snap, err := b.read(ctx, j.Name, req.From, req.To)
	if err != nil {
		return Result{}, err
	}
	if !snap.cursorKnown {
		return Result{}, refuse(ErrNotScheduled, "job %q has not been scheduled by a leader yet, so which of its ticks the schedule will run is not known; try again once a leader runs", j.Name)
	}
	p := snap.classify(j.Name, ts)
	res.SkippedExisting = append(res.SkippedExisting, p.existing...)
	res.LeftToSchedule = append(res.LeftToSchedule, p.left...)
	entries := make([]*queue.Entry, 0, len(p.queue))
	for _, t := range p.queue {
		e := queue.NewEntry(runs.ID(j.Name, t), j, req.Resources, t, t, 1, runs.Backfill)
		// Backfilled ticks come due together: they take turns for the
		// job's slots, whatever the overlap policy, as caught-up ones do.
		e.CatchUp = true
		if err := e.RenderKey(); err != nil {
			return Result{}, fmt.Errorf("backfill: job %s: %w", j.Name, err)
		}
		entries = append(entries, e)
	}
	written, existing, err := b.writeAll(ctx, entries)
	res.Queued = append(res.Queued, written...)
	res.SkippedExisting = append(res.SkippedExisting, existing...)
	if err != nil {
		return res, err
	}
	b.log.Info("backfill", "job", j.Name, "from", res.From, "to", res.To, "read_rev", snap.rev,
		"queued", len(res.Queued), "skipped_existing", len(res.SkippedExisting), "left_to_schedule", len(res.LeftToSchedule))
	return res, nil
}

// ticks checks the range and lists the job's ticks in it, after its
// exclusions and within start_at and end_at.
func (b *Backfiller) ticks(req Request) ([]time.Time, error) {
	j, from, to := req.Job, req.From, req.To
	now := b.clock.Now()
	switch {
	case !from.Before(to):
		return nil, refuse(ErrBadRange, "job %q: from %s is not before to %s; give a range whose from comes first",
			j.Name, stamp(from), stamp(to))
	case to.After(now):
		return nil, refuse(ErrBadRange, "job %q: to %s is in the future (now %s): backfill is for past ticks; future ones are the schedule's",
			j.Name, stamp(to), stamp(now))
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return nil, refuse(ErrBadRange, "job %q has no schedule to backfill (%v); trigger it instead", j.Name, err)
	}
	ts, next := ticks(sched, from, to, MaxTicks)
	if !next.IsZero() {
		return nil, refuse(ErrTooManyTicks, "job %q has more than %d ticks from %s to %s; backfill at most %d a request, e.g. to %s",
			j.Name, MaxTicks, stamp(from), stamp(to), MaxTicks, stamp(next))
	}
	return ts, nil
}

func stamp(t time.Time) string { return t.UTC().Format(runs.TimeFormat) }
