package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Withdrawing materialized ticks.
//
// Ticks are materialized up to the lookahead ahead (lookahead.go), several
// seconds with the replica's default. A change to a job must not wait for
// them to drain, so the leader takes back the pending entries of the job's
// scheduled ticks (never a manual run or a retry) and sets the job's
// cursor back, as if they had never been written:
//
//   - a changed job: the ticks not due within withdrawGuard; they are
//     planned again at once, with the new spec and schedule. A tick due
//     sooner may be being claimed, and keeps the spec it was scheduled
//     with.
//   - a paused job: all of them, due or not; its cursor goes back to now,
//     and while it is paused the cursor follows the clock, so a resume
//     plans from the moment it comes and does not catch up on the pause.
//   - a removed job: all of them; its runs in flight finish.
//
// Each entry is deleted only as it was read (its ModRevision), in a
// transaction fenced by the term and compared with the job's cursor, so a
// run a worker claimed meanwhile is not withdrawn, and the cursor never
// goes back past a tick that was not withdrawn without that tick's entry
// or record still there to stop it being materialized twice (docs/design.md#the-safety-rules, rule 2:
// the tick's write requires both absent). A withdrawn tick has neither: it
// never ran, and planning it again creates it once.

// withdrawGuard: a changed job's ticks due within this long are left to
// run as scheduled. Workers claim 25ms before a tick is due; the guard
// keeps the withdrawal clear of those claims even with clocks a little
// apart.
const withdrawGuard = 250 * time.Millisecond

// withdrawChunk: entries deleted per transaction, with their compares, the
// fence and the cursor's, under etcd's default limit of 128.
const withdrawChunk = 60

// withdrawable reports whether an entry is a scheduled tick not yet
// claimed: the only entries the leader withdraws.
func withdrawable(e *queue.Entry) bool {
	return e.State == queue.Pending && e.Trigger == runs.Schedule && e.Hold == nil
}

// withdrawer takes back materialized ticks for the passes (syncJobs and
// syncPaused mark the jobs; processOnce and passGone call it). It keeps
// no state of its own: the cursors it moves back are the cursor book's,
// the assignments it takes ticks out of are shared with the resolver.
type withdrawer struct {
	*base
	cursors *cursorBook
	assigns *assignments
}

// job withdraws the ticks of a job still in the config: a paused
// job's all, a changed job's not due within withdrawGuard.
func (wd *withdrawer) job(ctx context.Context, job string, paused bool, now time.Time) error {
	if paused {
		n, err := wd.withdraw(ctx, job, time.Time{}, now)
		if n > 0 {
			wd.d.Log.Info("paused: materialized ticks withdrawn", "job", job, "count", n)
		}
		return err
	}
	cut := now.Add(withdrawGuard)
	n, err := wd.withdraw(ctx, job, cut, cut)
	if n > 0 {
		wd.d.Log.Info("changed: materialized ticks withdrawn to be planned again", "job", job, "count", n)
	}
	return err
}

// removed withdraws every tick of a job no longer in the config.
func (wd *withdrawer) removed(ctx context.Context, job string) error {
	n, err := wd.withdraw(ctx, job, time.Time{}, wd.d.Clock.Now())
	if err != nil {
		return err
	}
	if n > 0 {
		wd.d.Log.Info("removed: materialized ticks withdrawn", "job", job, "count", n)
	}
	return nil
}

// withdraw deletes the job's withdrawable entries scheduled after `after`
// (all of them when it is zero) and sets its cursor back to `to` at the
// latest. It reports how many it withdrew; it tries again, reading afresh,
// when a claim or the cursor moved meanwhile.
func (wd *withdrawer) withdraw(ctx context.Context, job string, after, to time.Time) (int, error) {
	// No resolution moves a run between the read of the assignments and
	// the cursor's move back: a run moved meanwhile into an assignment
	// the withdrawal did not see would be planned again beside it.
	wd.assigns.mu.Lock()
	defer wd.assigns.mu.Unlock()
	total := 0
	for attempt := 0; ; attempt++ {
		n, err := wd.once(ctx, job, after, to)
		total += n
		if errors.Is(err, errCursorMoved) && attempt < 3 {
			continue
		}
		return total, err
	}
}

type withdrawn struct {
	key    string
	at     time.Time
	modRev int64
}

func (wd *withdrawer) once(ctx context.Context, job string, after, to time.Time) (int, error) {
	kept, n, err := wd.assigns.withdraw(ctx, job, after, to, wd.cursorBack(job))
	if err != nil {
		return n, err
	}
	if kept.After(to) {
		// The cursor stays at the job's last tick a worker claims from
		// an assignment. A changed job's entries before it stay too:
		// withdrawn, they would not be planned again. A paused or
		// removed job's go, as they would.
		to = kept
		if !after.IsZero() && kept.After(after) {
			after = kept
		}
	}
	// Read from etcd, not the view: the view may not yet show the ticks
	// this leader has just written.
	resp, err := wd.d.Client.Get(ctx, wd.d.Keys.JobQueue(job), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("leader: read the queue of %s: %w", job, err)
	}
	todo := []withdrawn{}
	for _, kv := range resp.Kvs {
		e, err := queue.Decode(kv.Value)
		if err != nil || !withdrawable(e) || (!after.IsZero() && !e.ScheduledAt.After(after)) {
			continue
		}
		todo = append(todo, withdrawn{key: string(kv.Key), at: e.ScheduledAt, modRev: kv.ModRevision})
	}
	// Latest first: after each transaction every tick between the cursor
	// and where it was is withdrawn, or still has its entry or record.
	slices.SortFunc(todo, func(a, b withdrawn) int { return b.at.Compare(a.at) })
	done := n
	for len(todo) > 0 {
		chunk := todo[:min(len(todo), withdrawChunk)]
		todo = todo[len(chunk):]
		cursor := to
		if len(todo) > 0 && todo[0].at.After(cursor) {
			cursor = todo[0].at
		}
		if err := wd.chunk(ctx, job, chunk, cursor); err != nil {
			return done, err
		}
		done += len(chunk)
	}
	// The cursor may still be ahead of to (no entry was withdrawn, or
	// only assigned ticks were): a paused job's must not be, or its
	// resume would wait for it.
	return done, wd.chunk(ctx, job, nil, to)
}

// chunk deletes the entries of chunk, each as it was read, and
// moves the job's cursor back to cursor if it is further ahead.
func (wd *withdrawer) chunk(ctx context.Context, job string, chunk []withdrawn, cursor time.Time) error {
	known, ok := wd.cursors.get(job)
	back := ok && known.After(cursor)
	if len(chunk) == 0 && !back {
		return nil
	}
	cmps := []clientv3.Cmp{wd.fence, wd.cursors.is(job, known, ok)}
	var ops []clientv3.Op
	for _, w := range chunk {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(w.key), "=", w.modRev))
		ops = append(ops, clientv3.OpDelete(w.key))
	}
	if back {
		ops = append(ops, clientv3.OpPut(wd.d.Keys.Cursor(job), queue.EncodeCursor(cursor)))
	}
	// Withdrawn scheduled runs no longer count against max_runs.
	j := wd.d.Config().Job(job)
	ops = append(ops, wd.cursors.countOps(j, -len(chunk))...)
	resp, err := wd.d.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(wd.term.Key)).Commit()
	if err != nil {
		return fmt.Errorf("leader: withdraw ticks of %s: %w", job, err)
	}
	if !resp.Succeeded {
		if wd.fenceGone(resp) {
			return errNotLeader
		}
		// A worker claimed one of them, or the cursor is not what this
		// leader knows: read it all again.
		if err := wd.reloadCursor(ctx, job); err != nil {
			return err
		}
		return errCursorMoved
	}
	if back {
		wd.cursors.set(job, cursor.UTC(), true)
	}
	wd.cursors.counted(j, -len(chunk))
	return nil
}

// cursorBack moves job's cursor back with each of its take-outs from
// the assignments (assignments.withdraw), compared as known.
func (wd *withdrawer) cursorBack(job string) cursorBack {
	return func(at time.Time) ([]clientv3.Cmp, []clientv3.Op, func()) {
		known, ok := wd.cursors.get(job)
		if !ok || !known.After(at) {
			return nil, nil, func() {}
		}
		cmps := []clientv3.Cmp{wd.cursors.is(job, known, ok)}
		ops := []clientv3.Op{clientv3.OpPut(wd.d.Keys.Cursor(job), queue.EncodeCursor(at))}
		return cmps, ops, func() { wd.cursors.set(job, at.UTC(), true) }
	}
}

// reloadCursor reads the job's cursor, and its count of scheduled runs
// (max_runs), into what this leader knows.
func (wd *withdrawer) reloadCursor(ctx context.Context, job string) error {
	resp, err := wd.d.Client.Txn(ctx).Then(clientv3.OpGet(wd.d.Keys.Cursor(job)), clientv3.OpGet(wd.d.Keys.Scheduled(job))).Commit()
	if err != nil {
		return fmt.Errorf("leader: read the cursor of %s: %w", job, err)
	}
	var count []byte
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		count = kvs[0].Value
	}
	cursorKVs := resp.Responses[0].GetResponseRange().Kvs
	if len(cursorKVs) == 0 {
		wd.cursors.reset(job, time.Time{}, false, count)
		return nil
	}
	t, err := queue.DecodeCursor(cursorKVs[0].Value)
	if err != nil {
		wd.cursors.setCount(job, count) // the cursor as known stays
		return fmt.Errorf("leader: the cursor of %s: %w", job, err)
	}
	wd.cursors.reset(job, t, true, count)
	return nil
}
