package assign

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// resolveAttempts bounds how often Resolve reads again after a worker or a
// cleanup changed what it read.
const resolveAttempts = 5

// Placement tells Resolve what to do with a run nobody claimed.
type Placement struct {
	// StartingDeadline is the job's starting_deadline: past it, the run
	// is recorded missed rather than moved.
	StartingDeadline func(job string) time.Duration
	// Worker is the live worker that takes job's run at instant; "" when
	// there is none (the run is then missed).
	Worker func(job string, instant time.Time) string
	// Follow, when set, is what a lost or missed record causes besides
	// itself (its retry's entry, notifications, chained runs, health),
	// written in the record's transaction.
	Follow func(rec *runs.Record) []clientv3.Op
}

// Resolution is what Resolve did with one run: Outcome lost or missed (the
// record written), or moved to To. Retries of lost runs are the caller'rv.
type Resolution struct {
	Job     string
	RunID   string
	At      time.Time
	Outcome runs.Outcome // "" when moved
	To      string
}

// Resolve is the leader's resolution of a dead worker: it reads the
// worker's assignments and claim markers at one revision and, for each run
// an assignment names that has no record, writes a lost record when a
// marker that is not ahead names it (it may have run: it must not run
// again as the same attempt), moves it to place.Worker within its starting
// deadline, or records it missed. A run only a marker still ahead names
// was claimed and never started (StartChunk): it moves or is missed as an
// unclaimed one is, since a dead incarnation never marks it started. Each assignment is resolved in one fenced transaction
// that also deletes it and its markers, and holds only if, since the read,
// the assignment did not change, no marker was written
// (ModRevision(claimed/<w>/<t>/) <= the read's revision: a claim of a
// worker restarted under the same id), the worker's member key is not on
// its lease (gone), and no run got a record. When one of them changed it reads again.
// ErrAlive: the worker's member key is on its lease.
func (rv *Resolver) Resolve(ctx context.Context, fence clientv3.Cmp, worker string, place Placement) ([]Resolution, error) {
	if place.StartingDeadline == nil || place.Worker == nil {
		return nil, fmt.Errorf("assign: resolve worker %s: the placement needs a starting deadline and a worker per job", worker)
	}
	var done []Resolution
	for range resolveAttempts {
		snap, err := rv.read(ctx, worker)
		if err != nil {
			return done, err
		}
		if snap.Member {
			return done, fmt.Errorf("assign: resolve worker %s: %w", worker, ErrAlive)
		}
		res, err := rv.resolveSnapshot(ctx, fence, snap, place)
		done = append(done, res...)
		if !errors.Is(err, ErrConflict) {
			return done, err
		}
	}
	return done, fmt.Errorf("assign: resolve worker %s: changed under %d reads: %w", worker, resolveAttempts, ErrConflict)
}

func (rv *Resolver) resolveSnapshot(ctx context.Context, fence clientv3.Cmp, snap Snapshot, place Placement) ([]Resolution, error) {
	var done []Resolution
	for i := range snap.Assignments {
		res, err := rv.resolveOne(ctx, fence, snap, &snap.Assignments[i], place)
		if err != nil {
			return done, err
		}
		done = append(done, res...)
	}
	return done, nil
}

// resolveOne resolves one assignment read in snap.
func (rv *Resolver) resolveOne(ctx context.Context, fence clientv3.Cmp, snap Snapshot, st *Stored, place Placement) ([]Resolution, error) {
	plan, err := rv.plan(ctx, st, place, snap.Revision)
	if err != nil {
		return nil, err
	}
	return rv.commitPlan(ctx, fence, snap, st, plan)
}

// resolvePlan is the writes of one assignment's resolution: one item a
// run recorded (lost or missed), and the runs moved, with the compares of
// the assignments they join.
type resolvePlan struct {
	items []planItem
	moved planItem
}

// planItem is the compares and writes of some runs and what they did.
type planItem struct {
	cmps []clientv3.Cmp
	ops  []clientv3.Op
	done []Resolution
}

func (it *planItem) add(o planItem) {
	it.cmps = append(it.cmps, o.cmps...)
	it.ops = append(it.ops, o.ops...)
	it.done = append(it.done, o.done...)
}

// plan decides each run's fate from its record and the markers, and reads
// the assignments the moved runs join.
func (rv *Resolver) plan(ctx context.Context, st *Stored, place Placement, rev int64) (resolvePlan, error) {
	var p resolvePlan
	unrecorded, err := rv.unrecorded(ctx, st)
	if err != nil {
		return p, err
	}
	now := rv.clock.Now().UTC()
	moves := map[string][]Job{}
	for _, j := range unrecorded {
		runID := st.RunID(j.Name)
		r := Resolution{Job: j.Name, RunID: runID, At: st.At}
		it := planItem{cmps: []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(rv.keys.Record(j.Name, runID)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(rv.keys.Entry(j.Name, runID)), "=", 0),
		}}
		// A run its chunk claimed ahead and never marked started did not
		// start: it is late, not lost (StartChunk).
		started := st.Started(j.Name)
		to := ""
		if !started && now.Before(st.At.Add(place.StartingDeadline(j.Name))) {
			to = place.Worker(j.Name, st.At)
		}
		switch {
		case started:
			r.Outcome = runs.Lost
			rec := lostRecord(st, j.Name, now)
			it.ops = append(queue.RecordOps(rv.keys, &rec), place.follow(&rec)...)
		case to != "" && to != st.Worker:
			r.To = to
			moves[to] = append(moves[to], j)
			it.done = []Resolution{r}
			p.moved.add(it)
			continue
		default:
			r.Outcome = runs.Missed
			rec := queue.MissedTick(j.Name, runID, st.At, fmt.Sprintf("worker %s died before starting it and no live worker could start it within its starting deadline", st.Worker))
			it.ops = append(queue.RecordOps(rv.keys, &rec), place.follow(&rec)...)
		}
		it.done = []Resolution{r}
		p.items = append(p.items, it)
	}
	for to, jobs := range moves {
		cmp, op := rv.moveTo(to, st, jobs, rev)
		p.moved.add(planItem{cmps: []clientv3.Cmp{cmp}, ops: []clientv3.Op{op}})
	}
	return p, nil
}

// unrecorded are the assignment's jobs whose run has no record and no
// queue entry. A run its worker handed to the queue path (refused at its
// claim, or not taken up) is the queue path's, though a marker names it:
// recorded lost, or moved, it would run there too and be recorded twice.
// The resolution's transactions compare both absent.
func (rv *Resolver) unrecorded(ctx context.Context, st *Stored) ([]Job, error) {
	if len(st.Jobs) == 0 {
		return nil, nil
	}
	if 2*len(st.Jobs) > rv.maxOps {
		return nil, fmt.Errorf("assign: resolve %s: %d jobs: %w", st.Key(rv.keys), len(st.Jobs), ErrTooLarge)
	}
	gets := make([]clientv3.Op, 0, 2*len(st.Jobs))
	for _, j := range st.Jobs {
		id := st.RunID(j.Name)
		gets = append(gets, clientv3.OpGet(rv.keys.Record(j.Name, id), clientv3.WithCountOnly()),
			clientv3.OpGet(rv.keys.Entry(j.Name, id), clientv3.WithCountOnly()))
	}
	resp, err := rv.kv.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return nil, fmt.Errorf("assign: resolve %s: read records and entries: %w", st.Key(rv.keys), err)
	}
	var out []Job
	for i, j := range st.Jobs {
		if resp.Responses[2*i].GetResponseRange().Count == 0 && resp.Responses[2*i+1].GetResponseRange().Count == 0 {
			out = append(out, j)
		}
	}
	return out, nil
}

// moveTo puts jobs in a new assignment of worker at from's instant, with
// the compare that it does not exist yet. Never into one that exists: a
// worker may have claimed from that one already, and a rewrite would make
// its later chunks fail (ModRevision) with runs left unclaimed.
func (rv *Resolver) moveTo(worker string, from *Stored, jobs []Job, rev int64) (clientv3.Cmp, clientv3.Op) {
	target := Assignment{Worker: worker, At: from.At, Group: movedGroup(&from.Assignment, rev), Jobs: jobs}
	key := target.Key(rv.keys)
	return clientv3.Compare(clientv3.CreateRevision(key), "=", 0), clientv3.OpPut(key, target.Encode())
}

// lostRecord records a run a dead worker's chunk tried: it may have
// started, so it is not run again as the same attempt.
func lostRecord(st *Stored, job string, now time.Time) runs.Record {
	return runs.Record{
		RunID: st.RunID(job), Job: job, Attempt: 1, Trigger: runs.Schedule,
		ScheduledAt: st.At.UTC(), EndedAt: now, Holder: st.Worker, Slot: -1, Outcome: runs.Lost,
		Error: fmt.Sprintf("worker %s died after claiming the run and before recording an outcome", st.Worker),
	}
}

// movedGroup is the group of the assignment that takes from's runs: named
// after from's worker and group and the revision the resolution read at,
// so runs moved from two dead workers, or by two resolutions, to one live
// worker at one instant go to different assignments.
func movedGroup(from *Assignment, rev int64) string {
	return fmt.Sprintf("%s~%s~%x", from.Worker, from.Group, rev)
}

func (p Placement) follow(rec *runs.Record) []clientv3.Op {
	if p.Follow == nil {
		return nil
	}
	return p.Follow(rec)
}
