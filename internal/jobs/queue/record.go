package queue

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Every run record is built here, one constructor per way a run ends, so
// that what a record says (its slot, token, times, attempts) means the same
// whoever wrote it. A run that never held a slot has slot -1.

// noSlot is the slot of a record of a run that never held one.
const noSlot = runs.NoSlot

// base is what every record of the entry's run says.
func (e *Entry) base(outcome runs.Outcome) runs.Record {
	return runs.Record{
		RunID:       e.RunID,
		Job:         e.Job,
		Attempt:     e.Attempt,
		Trigger:     e.Trigger,
		ScheduledAt: e.ScheduledAt,
		StartedAt:   e.StartedAt,
		Holder:      e.Holder,
		Slot:        e.Slot,
		Outcome:     outcome,
		Previous:    e.Previous,

		ConcurrencyKey: e.ConcurrencyKey,
		Input:          e.Input,
		UpstreamRunID:  e.UpstreamRunID,
	}
}

// Finished records an attempt that held slot with token from startedAt to
// endedAt; the target's result fills in the rest.
func (e *Entry) Finished(outcome runs.Outcome, slot int, token int64, startedAt, endedAt time.Time) runs.Record {
	r := e.base(outcome)
	r.Slot = slot
	r.FencingToken = token
	r.StartedAt = startedAt.UTC()
	r.EndedAt = endedAt.UTC()
	return r
}

// NotStarted records a run that ended without holding a slot: skipped or
// missed by a worker, or cancelled while queued.
func (e *Entry) NotStarted(outcome runs.Outcome, endedAt time.Time, why string) runs.Record {
	r := e.base(outcome)
	r.Slot = noSlot
	r.EndedAt = endedAt.UTC()
	r.Error = why
	return r
}

// Shed is the tick of a chunk record (runs.ChunkRecord) that NotStarted
// with outcome and why would record, and false for an entry whose record a
// chunk record cannot say: anything but the first attempt of a scheduled
// tick not started, with no input.
func (e *Entry) Shed(outcome runs.Outcome, why string) (runs.ShedRun, bool) {
	if e.Trigger != runs.Schedule || e.Attempt != 1 || len(e.Previous) > 0 || len(e.Input) > 0 ||
		e.UpstreamRunID != "" || e.Holder != "" || !e.StartedAt.IsZero() || e.RunID != runs.ID(e.Job, e.ScheduledAt) ||
		outcome != runs.Skipped && outcome != runs.Missed {
		return runs.ShedRun{}, false
	}
	return runs.ShedRun{Job: e.Job, Outcome: outcome, Error: why, ConcurrencyKey: e.ConcurrencyKey}, true
}

// Lost records a running attempt whose holder's slot (token) is gone
// without a release: the holder died or lost its session.
func (e *Entry) Lost(token int64, endedAt time.Time) runs.Record {
	r := e.base(runs.Lost)
	r.FencingToken = token
	r.EndedAt = endedAt.UTC()
	r.Error = fmt.Sprintf("holder %s lost slot %d (its session ended) before recording an outcome", e.Holder, e.Slot)
	return r
}

// MissedTick records a tick the leader found past its starting deadline,
// or dropped by the job's catch_up policy: it never had an entry.
func MissedTick(job, runID string, scheduledAt time.Time, why string) runs.Record {
	return runs.Record{RunID: runID, Job: job, Attempt: 1, Trigger: runs.Schedule,
		ScheduledAt: scheduledAt.UTC(), Outcome: runs.Missed, Slot: noSlot, Error: why}
}

// InFlight is what the API shows of a queued (token 0) or running run:
// a record without an outcome yet.
func (e *Entry) InFlight(token int64) runs.Record {
	r := e.base("")
	if e.State != Running {
		r.Slot = noSlot
		return r
	}
	r.FencingToken = token
	return r
}

// RecordOps are the writes of a record: the record, and for a run that
// never started (Unstarted) its marker, so that pruning can keep such
// records apart from runs that executed by reading keys only.
func RecordOps(k keys.Layout, r *runs.Record) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpPut(k.Record(r.Job, r.RunID), EncodeRecord(r))}
	if Unstarted(r) {
		ops = append(ops, clientv3.OpPut(k.UnstartedMark(r.Job, r.RunID), ""))
	}
	return ops
}

// Unstarted reports whether r counts against skipped_history_limit rather
// than history_limit: skipped or missed with no attempt before it. A retry
// skipped or missed after an attempt that ran (lost, failed) counts as the
// run that executed it was: a record never changes kind, so the pruner's
// count of a kind cannot drop between its read and its delete
// (docs/design-leader.md#history; the fault suite, 12-02: a lost record
// rewritten as a skipped retry left 9 of history_limit 10).
func Unstarted(r *runs.Record) bool {
	return (r.Outcome == runs.Skipped || r.Outcome == runs.Missed) && len(r.Previous) == 0
}

// EncodeRecord is a record as stored at runs/<job>/<run-id>: compact
// (runs.EncodeRecord); runs.DecodeRecord reads it.
func EncodeRecord(r *runs.Record) string { return runs.EncodeRecord(r) }
