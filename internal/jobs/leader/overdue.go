package leader

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// A tick of a job with overdue_after that has not succeeded by
// scheduled_at + overdue_after is overdue (docs/operations.md#overdue).
// The judge looks at each such tick once, when it falls due, in tick
// order: the job's overdue state (keys.Overdue) says up to which tick the
// leaders have judged, and moves in the transaction that writes the
// tick's "overdue" notifications, fenced and compared with the state as
// read, so a tick is judged once across leader changes and restarts,
// whichever leader's write wins. A job first seen with overdue_after is
// judged from then on, not over its past; the ticks of a job paused when
// they are scheduled or fall due are passed over.

// overdueRecheck is the longest the judge sleeps: it re-reads the config
// (a new overdue_after) at least this often.
const overdueRecheck = 10 * time.Second

// overdueConflict is how soon a job whose state moved under the judge's
// write (the view of it was behind) is looked at again.
const overdueConflict = 100 * time.Millisecond

// maxOverdueTicks bounds the ticks one round looks at for one job (a
// read each), so a leader back after a long gap catches up a round at a
// time.
const maxOverdueTicks = 256

// maxOverdueOps bounds the notifications one judgement writes, within
// etcd's default --max-txn-ops (128) beside the state and the fence.
const maxOverdueOps = 100

// pauseSlack: a paused job is looked at again at most this often (its
// ticks passed over are written), and the ticks up to this long after the
// judge last saw it paused are taken for ticks of the pause: the judge
// may see a resume that long after the last look that saw the pause.
const pauseSlack = time.Second

// judge is the actor that finds overdue ticks for one term. What it
// judged is in etcd (the jobs' overdue states, read through the view);
// its own state is when it last saw each job paused, its goroutine's.
type judge struct {
	*base
	pausedSeen map[string]time.Time
	last       *overdue.Last // the jobs' last successes, which a notification names
}

func newJudge(b *base) *judge {
	return &judge{base: b, pausedSeen: map[string]time.Time{}, last: b.d.Last}
}

// Run judges the ticks that fall due while the term lasts.
func (o *judge) Run(ctx context.Context) error {
	if o.d.Overdue == nil {
		return nil
	}
	timer := o.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	retry := roundRetry.Start()
	for {
		pausedChanged := o.d.Paused.Changed()
		next, err := o.round(ctx)
		if err != nil {
			if err == errNotLeader || ctx.Err() != nil {
				return err
			}
			next = o.d.Clock.Now().Add(retry.Next())
			o.d.Log.Warn("judging overdue ticks failed; will try again", "err", err, "at", next)
		} else {
			retry.Reset()
		}
		now := o.d.Clock.Now()
		wait := overdueRecheck
		if !next.IsZero() {
			wait = min(max(next.Sub(now), 0), overdueRecheck)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-pausedChanged:
		case <-timer.Chan():
		}
	}
}

// round judges every job's ticks that fell due and returns when the next
// one falls due (zero: none known).
func (o *judge) round(ctx context.Context) (time.Time, error) {
	cfg := o.d.Config()
	var next time.Time
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		if j.OverdueAfter <= 0 {
			continue
		}
		at, err := o.job(ctx, cfg, j)
		if err != nil {
			return next, err
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, nil
}

// job judges j's ticks that fell due since its state's Through and
// returns when its next tick falls due.
func (o *judge) job(ctx context.Context, cfg *config.Config, j *config.Job) (time.Time, error) {
	sched, err := j.ParsedSchedule()
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s: %w", j.Name, err)
	}
	now := o.d.Clock.Now()
	key := o.d.Keys.Overdue(j.Name)
	st, rev, known := o.d.Overdue.State(j.Name)
	if !known {
		// Judged from now on: its earlier ticks were not under watch.
		_, err := o.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			clientv3.OpPut(key, overdue.Encode(overdue.State{Through: now})))
		return now.Add(overdueConflict), err
	}
	judged, notes, next, err := o.scan(ctx, cfg, j, sched, st, now)
	if err != nil {
		return time.Time{}, err
	}
	if judged.Through.Equal(st.Through) {
		return next, nil
	}
	ok, err := o.fenced(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
		append(notes, clientv3.OpPut(key, overdue.Encode(judged)))...)
	if err == nil && !ok {
		return now.Add(overdueConflict), nil // judged meanwhile: the view is behind
	}
	return next, err
}

// scan judges j's ticks after st.Through that fell due by now: it returns
// the state to write, the notifications of the ticks found overdue and
// when to look again. A paused job's ticks are passed over up to now, and
// so are, once it is resumed, the ticks up to pauseSlack after this term
// last saw it paused: they were scheduled while it was, so never
// materialized (docs/design-leader.md#a-pause-ends-at-its-until).
func (o *judge) scan(ctx context.Context, cfg *config.Config, j *config.Job, sched schedule.Schedule, st overdue.State, now time.Time) (overdue.State, []clientv3.Op, time.Time, error) {
	paused := o.d.Paused.Is(j.Name, j.Paused)
	if paused {
		o.pausedSeen[j.Name] = now
	}
	seen, wasPaused := o.pausedSeen[j.Name]
	sinks := wanting(cfg, j)
	judged, notes, next := st, []clientv3.Op(nil), time.Time{}
	looked := 0
	var last *overdue.Succeeded // read once the first tick is found overdue
	lastRead := false
	for t := sched.Next(st.Through); !t.IsZero(); t = sched.Next(t) {
		due := t.Add(j.OverdueAfter.D())
		passOver := paused || (wasPaused && !t.After(seen.Add(pauseSlack)))
		if passOver && t.After(now) {
			next = t
			if paused {
				next = maxTime(t, now.Add(pauseSlack))
			}
			break
		}
		if !passOver && due.After(now) {
			next = due
			break
		}
		if looked++; looked > maxOverdueTicks || len(notes)+len(sinks) > maxOverdueOps {
			next = now // the rest at once, in the next transaction
			break
		}
		judged.Through = t
		if passOver {
			continue
		}
		outcome, ok, err := o.look(ctx, j.Name, t)
		if err != nil {
			return st, nil, time.Time{}, err
		}
		if ok {
			continue
		}
		judged.Tick = &overdue.Tick{RunID: runs.ID(j.Name, t), ScheduledAt: t, Outcome: outcome, At: now}
		if len(sinks) > 0 && !lastRead {
			if last, err = o.lastSuccess(ctx, j.Name); err != nil {
				return st, nil, time.Time{}, err
			}
			lastRead = true
		}
		notes = append(notes, o.notes(j, sinks, judged.Tick, due, last)...)
		o.d.Log.Warn("tick overdue: not succeeded in time", "job", j.Name, "run_id", judged.Tick.RunID, "outcome", outcome, "due", due)
	}
	return judged, notes, next, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// look reads what etcd holds of j's tick at t and judges it
// (overdue.Read.Judge).
func (o *judge) look(ctx context.Context, job string, t time.Time) (outcome string, succeeded bool, err error) {
	id := runs.ID(job, t)
	k := o.d.Keys
	resp, err := o.d.Client.Txn(ctx).Then(
		clientv3.OpGet(k.Entry(job, id)),
		clientv3.OpGet(k.Record(job, id)),
		clientv3.OpGet(k.FanIn(job, id)),
		clientv3.OpGet(k.Entry(job, id+"#"), clientv3.WithPrefix()), // its shards' (runs.ShardID)
		clientv3.OpGet(k.Record(job, id+"#"), clientv3.WithPrefix()),
		// An assigned run has no entry while it runs: its slot says so.
		o.d.Slots.HeldOfOp(job),
	).Commit()
	if err != nil {
		return "", false, fmt.Errorf("leader: read tick %s: %w", id, err)
	}
	var r overdue.Read
	for i, res := range resp.Responses {
		for _, kv := range res.GetResponseRange().Kvs {
			switch i {
			case 0, 3:
				r.Entries = append(r.Entries, kv.Value)
			case 1, 4:
				r.Records = append(r.Records, kv.Value)
			case 2:
				r.FanIn = kv.Value
			}
		}
	}
	for _, s := range o.d.Slots.Decode(resp.Responses[5].GetResponseRange().Kvs) {
		if s.RunID == id || strings.HasPrefix(s.RunID, id+"#") {
			r.Executing = true
		}
	}
	outcome, succeeded = r.Judge()
	return outcome, succeeded, nil
}

// wanting is the names of j's sinks that want "overdue".
func wanting(cfg *config.Config, j *config.Job) []string {
	var out []string
	for _, s := range cfg.SinksOf(j) {
		if s.Wants(config.Overdue) {
			out = append(out, s.Name)
		}
	}
	return out
}

// lastSuccess is job's last success (nil: none), read from etcd.
func (o *judge) lastSuccess(ctx context.Context, job string) (*overdue.Succeeded, error) {
	if o.last == nil {
		return nil, nil
	}
	lasts, err := o.last.Of(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	return lasts(job), nil
}

// notes is the "overdue" notification of tick to each of sinks: the
// tick, what it is so far and the job's last success, last.
func (o *judge) notes(j *config.Job, sinks []string, tick *overdue.Tick, due time.Time, last *overdue.Succeeded) []clientv3.Op {
	rec := runs.Record{RunID: tick.RunID, Job: j.Name, Trigger: runs.Schedule, ScheduledAt: tick.ScheduledAt, Slot: -1}
	info := &notify.Overdue{Outcome: tick.Outcome, DueAt: due.UTC()}
	if last != nil {
		info.LastSucceededRunID, info.LastSucceededEndedAt = last.RunID, last.EndedAt
	}
	ops := make([]clientv3.Op, 0, len(sinks))
	for _, s := range sinks {
		n := notify.New(s, config.Overdue, &rec, tick.At)
		n.Overdue = info
		ops = append(ops, clientv3.OpPut(o.d.Keys.Notification(s, n.ID), n.Encode()))
	}
	return ops
}
