// Package queue is the run queue in etcd as every replica sees it: the
// entry of one pending or running run (queue/<job>/<run-id>) and its codec,
// the job specs entries refer to (specs/<job>/<ref>) and their view, the
// watched view of all entries and its index, a sharded tick's entries and
// fan-in key, a slot kept for a retry, the job cursors, the one file that
// builds run records, and the unfenced writes anyone may make to an entry
// it saw (and the request to stop a running one). What a run's end
// writes beside its record is package follow's.
package queue

import (
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// State of a queue entry.
type State string

const (
	// Pending: waiting for not_before and a free slot.
	Pending State = "pending"
	// Running: claimed. The claim transaction rewrote the entry, so its
	// ModRevision equals the CreateRevision of the slot it took (the
	// fencing token). A running entry whose slot key no longer has that
	// CreateRevision belongs to a holder that died: the run is lost.
	Running State = "running"
)

// Entry is the value of queue/<job>/<run-id>. It names the job spec the
// leader scheduled the run with (SpecRef: specs/<job>/<SpecRef>, written
// once per version of the spec), so a worker whose config file is older
// runs what the leader scheduled, and the value every replica watches stays
// small. Spec and Resources are that spec once resolved (Resolved): the
// view resolves what it can from its copy of specs/, the worker and the
// leader read etcd for the rest (Specs.Resolve).
//
// An entry written by an older version carries its spec inline and has no
// SpecRef; it keeps that form (Encode writes it as the older version did)
// for the rest of its life, so either version can claim, release or reap it.
type Entry struct {
	RunID       string
	Job         string
	ScheduledAt time.Time
	NotBefore   time.Time
	Attempt     int
	Trigger     runs.Trigger
	// SpecRef names the run's spec; empty in an entry with an inline spec.
	SpecRef string
	// Spec and Resources are the run's spec and the limits the leader's
	// config gave its resources: set when Resolved.
	Spec      config.Job
	Resources []ResourceLimit
	// Input is what the run is given, a JSON object (docs/api.md: a
	// trigger's input, its upstream's when chained, or else the job's
	// default); it reaches the target and the record. ConcurrencyKey is
	// the job's concurrency_key rendered over it when the entry was
	// created, so every worker claims the same key.
	Input          json.RawMessage
	ConcurrencyKey string
	State          State
	// CatchUp marks a tick run late by the catch_up policy. Caught-up
	// ticks come due together; they wait for a slot in turn (until the
	// starting deadline) instead of skipping one another.
	CatchUp bool
	// Previous carries the earlier attempts of a retried run into its
	// final record.
	Previous []runs.Attempt
	// UpstreamRunID is the run whose end queued this one (trigger chain).
	UpstreamRunID string

	// Set while running.
	Holder    string
	Slot      int
	StartedAt time.Time
	// HeldToken is set while running on a slot a previous attempt kept:
	// the slot's CreateRevision is then older than the entry's ModRevision.
	HeldToken int64
	// Hold is set on a pending retry whose slot the failed attempt kept.
	Hold *Hold

	resolved bool
	// specValue is the stored spec of an entry made here (NewEntry): what
	// its writer puts at specs/<job>/<SpecRef> (SpecOp).
	specValue string
}

// ResourceLimit is a shared resource a run takes one slot of, with the limit
// the leader's config gave it.
type ResourceLimit struct {
	Name  string       `json:"name"`
	Limit int          `json:"limit"` // 0: a rate only
	Rate  *config.Rate `json:"rate,omitempty"`
}

// NewEntry is a pending run of job at scheduledAt (now, for manual runs),
// due at notBefore. Its spec is job with the limits resources give it;
// whoever writes the entry writes the spec too (SpecOp), in the same
// transaction.
func NewEntry(runID string, job *config.Job, resources []config.Resource, scheduledAt, notBefore time.Time, attempt int, trigger runs.Trigger) *Entry {
	spec := Spec{Job: *job}
	for _, name := range job.Resources {
		for _, r := range resources {
			if r.Name == name {
				spec.Resources = append(spec.Resources, ResourceLimit{Name: r.Name, Limit: r.Limit, Rate: r.Rate})
			}
		}
	}
	value, ref := spec.encode()
	return &Entry{
		RunID:       runID,
		Job:         job.Name,
		ScheduledAt: scheduledAt.UTC(),
		NotBefore:   notBefore.UTC(),
		Attempt:     attempt,
		Trigger:     trigger,
		SpecRef:     ref,
		Spec:        spec.Job,
		Resources:   spec.Resources,
		Input:       job.DefaultInput(),
		State:       Pending,
		resolved:    true,
		specValue:   value,
	}
}

// Resolved reports whether the entry's Spec and Resources are known.
func (e *Entry) Resolved() bool { return e.resolved }

// JobSpec is the run's spec, or nil while it is not resolved.
func (e *Entry) JobSpec() *config.Job {
	if !e.resolved {
		return nil
	}
	return &e.Spec
}

// SpecKey is the key of the entry's spec, empty for an inline one.
func (e *Entry) SpecKey(k keys.Layout) string {
	if e.SpecRef == "" {
		return ""
	}
	return k.Spec(e.Job, e.SpecRef)
}

// SpecOp is the write of the spec of an entry made by NewEntry, for the
// transaction that creates the entry; ok is false for any other entry.
func (e *Entry) SpecOp(k keys.Layout) (op clientv3.Op, ok bool) {
	if e.specValue == "" || e.SpecRef == "" {
		return clientv3.Op{}, false
	}
	return clientv3.OpPut(k.Spec(e.Job, e.SpecRef), e.specValue), true
}

// withSpec is the entry resolved to s.
func (e *Entry) withSpec(s *Spec) *Entry {
	r := *e
	r.Spec, r.Resources, r.resolved = s.Job, s.Resources, true
	return &r
}

// RenderKey sets the entry's concurrency key from its job's template and
// its input; the error is a *config.KeyError, whose text names the job and
// is what a trigger's answer or the skipped run's record says. Call it
// where the entry is created, so a run whose key is bad never enters the
// queue.
func (e *Entry) RenderKey() error {
	k, err := e.Spec.ConcurrencyKeyFor(e.Input)
	if err != nil {
		return err
	}
	e.ConcurrencyKey = k
	return nil
}

// Running is the entry as a claim of a fresh slot rewrites it: held by
// holder since startedAt in slot. The slot's own token fences the run: a
// slot another attempt kept, which the entry may still name (its holder
// gone), is not the run's, and the reaper would take the run for lost
// were the entry to name that slot's token.
func (e *Entry) Running(holder string, slot int, startedAt time.Time) *Entry {
	r := *e
	r.State = Running
	r.Holder = holder
	r.Slot = slot
	r.StartedAt = startedAt.UTC()
	r.HeldToken, r.Hold = 0, nil
	return &r
}

// RunningHeld is the entry as a claim with the slot its previous attempt
// kept rewrites it (slots.ClaimHeld): running on that slot, whose token,
// not the claim's revision, fences the run. e must carry a Hold.
func (e *Entry) RunningHeld(holder string, startedAt time.Time) *Entry {
	r := e.Running(holder, e.Hold.Slot, startedAt)
	r.HeldToken = e.Hold.Token
	return r
}

// Retry is the pending entry of the next attempt after the attempt that
// rec records, or nil when no retries remain.
// Attempts cut by a graceful shutdown (interrupted) use no retry.
func (e *Entry) Retry(now time.Time, rec *runs.Record) *Entry {
	if e.Attempt-runs.Interruptions(e.Previous) >= 1+e.Spec.Retries.Max {
		return nil
	}
	return e.next(rec, now.Add(e.Spec.Retries.Delay(e.Attempt)))
}

// Requeue is the pending entry of the attempt after one that a graceful
// shutdown interrupted (rec), due at once, or nil when the run was
// interrupted maxInterruptions times already or its job says
// on_shutdown: cancel. It is a new attempt, so the run id still executes
// at most once per attempt (docs/protocol.md#why-the-guarantees-hold, G1), and it uses none of the retries.
func (e *Entry) Requeue(now time.Time, rec *runs.Record, maxInterruptions int) *Entry {
	if e.Spec.OnShutdown == config.OnShutdownCancel || runs.Interruptions(e.Previous) >= maxInterruptions {
		return nil
	}
	return e.next(rec, now)
}

// next is the pending entry of the attempt after rec's, due at notBefore.
func (e *Entry) next(rec *runs.Record, notBefore time.Time) *Entry {
	next := *e
	next.Previous = append(append([]runs.Attempt(nil), e.Previous...), rec.Summary())
	next.Attempt = e.Attempt + 1
	next.Trigger = runs.Retry
	next.NotBefore = notBefore.UTC()
	next.State = Pending
	next.Holder, next.Slot, next.StartedAt = "", 0, time.Time{}
	next.HeldToken, next.Hold = 0, nil
	return &next
}
