package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/admission"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// maxChunk is the most runs one claim transaction takes (docs/protocol.md:
// chunks of up to 40 keep a chunk well inside etcd's --max-txn-ops).
const maxChunk = 40

// dispatchAssigned takes up the assignments due for claiming, each in a
// goroutine of its own that the drain waits for.
func (a *assignedRunner) dispatchAssigned(ctx context.Context) {
	if a.d.Assign == nil {
		return
	}
	for _, st := range a.view.take(a.d.Clock.Now()) {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.runAssignment(ctx, st)
		}()
	}
}

// assignedRun is one run of an assignment on its way to a claim.
type assignedRun struct {
	job   assign.Job
	runID string
	entry *queue.Entry // pending, resolved
	slot  int
}

// claimRound is one assignment this worker claims from and runs.
type claimRound struct {
	st        assign.Stored
	sess      *session.Session
	log       *slog.Logger
	chunk     int            // the next chunk's number: each marker's own
	running   sync.WaitGroup // its claimed runs
	unsettled atomic.Int32   // its runs this worker could neither record nor queue
	later     []assignedRun  // refused before the instant: tried again at it
	gone      bool           // a chunk found the assignment moved or deleted

	// mu guards markers (a start mark rewrites one, assigned_start.go)
	// and st, which only the round's goroutine writes (rewrote).
	mu      sync.Mutex
	markers []assign.Marker // of the chunks that claimed: what the cleanup compares
}

// addMarker notes a chunk's marker and returns its index.
func (r *claimRound) addMarker(m assign.Marker) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markers = append(r.markers, m)
	return len(r.markers) - 1
}

// stored is r's assignment as the round last read or wrote it, for a
// goroutine other than the round's (a chunk's start, its hand-off): the
// round rewrites it when it sheds ticks in a chunk record (assigned_chunk.go).
func (r *claimRound) stored() assign.Stored {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// rewrote is r's assignment as the round wrote it: its jobs and revision
// (the rest, its key and instant, which other goroutines read, stay).
func (r *claimRound) rewrote(st assign.Stored) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Jobs, r.st.ModRevision = st.Jobs, st.ModRevision
}

func (r *claimRound) markerRevision(i int) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.markers[i].ModRevision
}

func (r *claimRound) setMarkerRevision(i int, rev int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.markers[i].ModRevision = rev
}

// runAssignment claims st's runs in chunks as max_parallel leaves room,
// runs those it got, and settles the rest: a pending entry (the queue path
// decides), a skipped or missed record, or nothing when etcd says another
// decided. When every run is settled it deletes the assignment and its
// markers; a run left unsettled (a drain, an error) is the leader's to
// resolve once this incarnation is gone.
func (a *assignedRunner) runAssignment(ctx context.Context, st assign.Stored) {
	r := &claimRound{st: st, log: a.d.Log.With("assignment", st.Key(a.d.Keys))}
	sess, err := a.d.Sessions.Current(ctx)
	if err != nil {
		return
	}
	if st.Worker != keys.Incarnation(a.d.ID, int64(sess.Lease())) {
		r.log.Info("assignment of an earlier session left to the leader")
		return
	}
	r.sess = sess
	a.claiming.Add(1) // until every chunk is sent: no take-over meanwhile
	began := a.d.Clock.Now()
	settled := a.claimAll(ctx, r)
	a.claimSent()
	r.log.Debug("assignment's chunks sent", "due", st.At, "runs", len(st.Jobs), "chunks", r.chunk,
		"began_before", st.At.Sub(began), "ended_before", st.At.Sub(a.d.Clock.Now()))
	if settled {
		a.claimLater(ctx, r)
	}
	a.settleLater(ctx, r)
	r.running.Wait()
	if settled && r.unsettled.Load() == 0 {
		r.st.Markers = r.markers // every start mark is written by now (running)
		if len(r.st.Jobs) == 0 {
			// Deleted by the chunk record that shed its last runs; the
			// markers of chunks whose runs were all refused ahead and
			// shed since (shedWaiting) are left to delete.
			r.st.ModRevision = 0
		}
		a.cleanup(ctx, r.st, r.log)
	}
}

// claimAll claims r's runs in chunks, shedding what is late before each;
// false when it stopped before every run was settled (draining, a new
// session, the assignment gone): the rest is the leader's once this
// incarnation ends.
func (a *assignedRunner) claimAll(ctx context.Context, r *claimRound) bool {
	todo := r.st.Jobs
	for len(todo) > 0 {
		if todo = a.shedLate(ctx, r, todo); len(todo) == 0 {
			break
		}
		reserved, alive := a.reserve(ctx, r.sess, &r.st, todo)
		if !alive {
			return false
		}
		if len(reserved) == 0 {
			continue // woke to shed what is late now
		}
		todo = todo[len(reserved):]
		rs := a.prepare(ctx, r, reserved)
		if len(rs) == 0 {
			continue
		}
		if !a.claimChunk(ctx, r, rs) {
			return false
		}
	}
	return true
}

// finishAll gives back the places of rs, runs that will not start here.
func (a *assignedRunner) finishAll(rs []assignedRun) {
	for _, run := range rs {
		a.core.finish(run.runID)
	}
}

// claimSent counts an assignment whose chunks are all sent; the last
// wakes the loop, which may take over again (dispatchTakeOvers).
func (a *assignedRunner) claimSent() {
	if a.claiming.Add(-1) == 0 {
		a.signal()
	}
}

// prepare resolves each run's spec and settles at once what needs no claim:
// past its starting deadline or superseded while it waited for its place
// (missed: in a chunk record where it may go, as shedLate's), paused
// (skipped), or of a job the lean path does not take (a pending entry). It
// returns the runs to claim; the others give their places back.
func (a *assignedRunner) prepare(ctx context.Context, r *claimRound, jobs []assign.Job) []assignedRun {
	st, unsettled := &r.st, &r.unsettled
	var rs []assignedRun
	var ends []unclaimedEnd
	defer func() {
		a.shed(ctx, r, ends)
		a.finishEnds(ends)
	}()
	for _, j := range jobs {
		run := assignedRun{job: j, runID: st.RunID(j.Name)}
		base := pendingEntry(st, j)
		it, err := a.d.Specs.Resolve(ctx, &queue.Item{Entry: base})
		if err != nil {
			// The queue path waits for the spec, as long as the run's
			// starting deadline allows (start.go, resolve).
			a.settleAssigned(ctx, st, base, "its spec is not readable yet: "+err.Error(), unsettled)
			continue
		}
		run.entry = it.Entry
		run.entry.Input = run.entry.Spec.DefaultInput()
		// The leader assigned it by the same description; a spec changed
		// since may need more, which the queue path grants.
		if why := admission.Of(&run.entry.Spec, resourceDefs(run.entry)).Beyond(); why != "" {
			a.settleAssigned(ctx, st, run.entry, why, unsettled)
			continue
		}
		now := a.d.Clock.Now()
		if end, ok := a.notToStart(run.entry, st.At, now); ok {
			ends = append(ends, end)
			continue
		}
		if i, ok := a.d.Slots.FreeIndex(slots.JobSlot, keys.SlotGroup(j.Name, ""), run.entry.Spec.MaxConcurrency); ok {
			run.slot = i
		}
		rs = append(rs, run)
	}
	return rs
}

// pendingEntry is j's run of st as a pending queue entry, its spec not
// resolved yet.
func pendingEntry(st *assign.Stored, j assign.Job) *queue.Entry {
	return &queue.Entry{RunID: st.RunID(j.Name), Job: j.Name, ScheduledAt: st.At.UTC(), NotBefore: st.At.UTC(), Attempt: 1,
		Trigger: runs.Schedule, SpecRef: j.SpecRef, State: queue.Pending}
}

// claimChunk claims rs and starts those it got; the runs a chunk sent
// before the instant found their slot taken give their places back and go
// to r.later, to be tried again at the instant (the run before may end by
// then); refused after it, skipsAtOnce decides. False when the assignment
// is gone (moved or deleted by the leader) or the leader is to resolve
// it, and no more is to be claimed.
func (a *assignedRunner) claimChunk(ctx context.Context, r *claimRound, rs []assignedRun) bool {
	st, sess, chunk, unsettled := &r.st, r.sess, r.chunk, &r.unsettled
	r.chunk++
	startedAt := a.d.Clock.Now()
	if startedAt.Before(st.At) {
		startedAt = st.At // claimed a lead early: starts when due
	}
	tries := make([]assign.Run, len(rs))
	for i, r := range rs {
		tries[i] = assign.Run{Job: r.job.Name, Slot: r.slot, StartedAt: startedAt, Holder: a.d.ID}
	}
	claims, err := a.claimTries(ctx, sess, st, chunk, tries, r.log)
	if err != nil {
		a.finishAll(rs)
		r.gone = errors.Is(err, assign.ErrGone)
		switch {
		case !r.gone:
			unsettled.Add(1)
			r.log.Warn("claiming an assignment's runs failed: the leader resolves them", "chunk", chunk, "err", err)
		case chunk == 0:
			// Written anew before any of its runs was claimed (a
			// withdrawal takes out only what no chunk claimed from):
			// the view's newer version is taken up afresh.
			a.view.retake(st.Key(a.d.Keys), st.ModRevision)
		}
		return false
	}
	marker := r.addMarker(assign.Marker{Chunk: chunk, ModRevision: claims[0].Revision})
	var claimed []heldRun
	var skipped []unclaimedEnd
	for i, c := range claims {
		run := rs[i]
		switch {
		case c.Outcome == assign.Claimed:
			held := a.d.Slots.Adopt(sess, run.job.Name, "", run.slot, c.Token, nil,
				slots.Value{RunID: run.runID, Holder: a.d.ID, StartedAt: startedAt.UTC(), ScheduledAt: st.At.UTC()})
			claimed = append(claimed, heldRun{run: run, held: held})
		case c.Reason == assign.RecordExists:
			a.core.finish(run.runID) // decided already
		case c.Reason == assign.SlotTaken && c.Ahead:
			// Sent before the instant, so maybe refused before it: tried
			// again at the instant (claimLater); meanwhile it waits
			// holding no place, as a queued run waits for its slot.
			a.core.finish(run.runID)
			r.later = append(r.later, run)
		case skipsAtOnce(run.entry, c, st.At):
			skipped = append(skipped, slotTakenSkip(run.entry))
		default:
			// A slot taken, or a run of the job waiting: the queue path
			// applies overlap, fair order and queue_limit as for any run.
			a.settleAssigned(ctx, st, run.entry, string(c.Reason), unsettled)
		}
	}
	a.startClaimed(ctx, r, chunk, marker, claims[0].Ahead, claimed, startedAt)
	a.shed(ctx, r, skipped)
	a.finishEnds(skipped)
	return true
}

// skipsAtOnce reports whether a run etcd refused at its instant or after
// (c, of a chunk sent then: its compares saw the slot after the instant)
// is skipped here, as the queue path's claim would skip it, in that
// path's words (slotTakenSkip): its overlap is skip, its job has one slot
// (the claim compared the one it picked; of more, another may be free),
// and that slot's run either started by the run's instant, so the slot
// was taken when the run came due, or is of a later tick of the job (the
// run was claimed so late that the next tick, claimed ahead, runs), or no
// run of the job was in the queue (c.Queued): the holder is a lean run,
// which fair order does not see, and the queue path's claim skips the
// run too while that run holds the slot (docs/design-admission.md, fair
// order; TestALeanRunBehindALateLeanElderEndsAsOnTheQueuePath). One whose
// slot an elder of the queue took after the instant (a tick the queue path
// held, such as a new leader's, claimed late) is the queue path's fair
// order to decide: the run takes its turn after the elder (a worker that
// skipped those at once skipped six ticks of jobs @every 100ms when the
// bench's failover step stopped the leader).
//
// The skips of a chunk go as a shed's (shed): more than shedAfter late, in
// chunk records (the round behind an overload makes), else their records
// in one transaction; on the queue path each cost etcd an entry, a claim
// and a record apart, and its replica followed the job slots meanwhile:
// at 4,000 jobs, where runs claimed late still held their slots at their
// jobs' next ticks, that is what tipped the step into falling behind
// (docs/performance.md, Bounds).
func skipsAtOnce(e *queue.Entry, c assign.Claim, at time.Time) bool {
	return c.Reason == assign.SlotTaken && e.Spec.Overlap == config.OverlapSkip && e.Spec.MaxConcurrency == 1 &&
		(!c.Holder.StartedAt.After(at) || c.Holder.ScheduledAt.After(at) || !c.Queued)
}

// slotTakenSkip is the end of a run skipsAtOnce skips: the record and
// reason the queue path writes (skipWhy).
func slotTakenSkip(e *queue.Entry) unclaimedEnd {
	reason, what := reasonOf(&slots.FullError{Limit: slots.LimitJob, Name: e.Job, Slots: e.Spec.MaxConcurrency})
	return unclaimedEnd{entry: e, outcome: runs.Skipped, reason: reason, msg: skipWhy(what, e.Spec.Overlap)}
}

// claimTries sends one chunk until etcd answers it, the assignment is
// gone, or the session or ctx ends. A chunk sent again is the same runs
// with the same slot picks: one whose first answer was lost reads its own
// slots back (ClaimChunk), and no run can take a second slot.
func (a *assignedRunner) claimTries(ctx context.Context, sess *session.Session, st *assign.Stored, chunk int, tries []assign.Run, log *slog.Logger) ([]assign.Claim, error) {
	b := settleRetry.Start()
	for {
		// Not cut by a shutdown: a claim cut in flight may be applied with
		// its answer lost, and its runs are then recorded lost; one that
		// completes starts its runs, which the drain lets end.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
		claims, err := a.d.Assign.Claimer().ClaimChunk(cctx, sess.Lease(), st.Assignment, st.ModRevision, chunk, tries)
		cancel()
		if err == nil || errors.Is(err, assign.ErrGone) || sess.Err() != nil {
			return claims, err
		}
		log.Warn("claiming an assignment's runs failed; trying again", "chunk", chunk, "err", err, "in", b.Delay())
		if !b.Wait(ctx, a.d.Clock) {
			return nil, err
		}
	}
}

// runClaimed executes a claimed run as a queued one is (execute), with no
// entry: its release compares its slot only (keepOrRelease). It reports
// whether the run's end was applied.
func (a *assignedRunner) runClaimed(ctx context.Context, r assignedRun, held *slots.Held, startedAt time.Time) bool {
	q := &queue.Item{Entry: r.entry}
	_, span := tracing.StartRun(ctx, a.d.Tracer, tracing.RunInfo{Job: r.job.Name, RunID: r.runID, Attempt: 1, Trigger: runs.Schedule, Holder: a.d.ID})
	defer span.End()
	log := runLog(a.d.Log, held, "job", r.job.Name, "run_id", r.runID, "attempt", 1)
	return a.core.execute(q, r.entry.Running(a.d.ID, held.Slot, startedAt), held, log, span) == nil
}
