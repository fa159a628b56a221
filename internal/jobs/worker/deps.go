package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/required"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Sessions hands out the replica's current session.
type Sessions interface {
	Current(ctx context.Context) (*session.Session, error)
}

// Slots claims and releases slots, and says when any slot changes.
type Slots interface {
	Claim(ctx context.Context, sess *session.Session, req slots.Request) (*slots.Held, error)
	Release(ctx context.Context, h *slots.Held, then ...clientv3.Op) error
	// Adopt tracks the slots an assignment's claim put (assign.ClaimChunk);
	// FreeIndex picks the slot index a claim tries.
	Adopt(sess *session.Session, job, key string, slot int, token int64, res []slots.HeldResource, v slots.Value) *slots.Held
	FreeIndex(kind slots.Kind, name string, limit int) (int, bool)
	Changed() <-chan struct{}
	// Keep and ClaimHeld carry a slot across a strict retry.
	Keep(ctx context.Context, h *slots.Held, witness string, then ...clientv3.Op) error
	ClaimHeld(ctx context.Context, sess *session.Session, req slots.Request, slot int, token int64, res []slots.HeldResource) (*slots.Held, error)
	// Holds says whether a kept slot lives; DropKept gives up one its
	// retry no longer waits on.
	Holds(ctx context.Context, k slots.Kept) bool
	DropKept(ctx context.Context, k slots.Kept) error
	// Free and FreePlaces say how much room the view shows, for fair order.
	Free(kind slots.Kind, name string, limit int) int
	FreePlaces(r slots.Rate, at time.Time) int
}

// Executor runs a target.
type Executor interface {
	Execute(ctx context.Context, job *config.Job, run target.Run) target.Result
}

// Deps is what the worker works with. Every field is required but Clock,
// Log, ClaimLead, Backup and Tracer.
type Deps struct {
	Client   *clientv3.Client
	Keys     keys.Layout
	ID       string // this replica: the holder of the runs it executes
	Sessions Sessions
	Slots    Slots
	Executor Executor
	Queue    *queue.View
	Specs    *queue.Specs // resolves what Queue has not: a run starts only with the spec its entry names
	// Paused is the pause state: a scheduled run of a paused job does not
	// start (nil: none is paused).
	Paused  *pause.View
	Config  func() *config.Config
	Metrics *metrics.Set
	Clock   clockwork.Clock
	Log     *slog.Logger
	// ClaimLead: a worker claims this long before a run is due, so the
	// claim's round trip is not part of the run's lateness.
	ClaimLead time.Duration
	// Backup: a worker that is not the run's preferred worker waits this
	// long (per rank) before competing for it, so one worker, not all,
	// claims a run.
	Backup time.Duration
	// Tracer makes each attempt's spans (docs/design-edges.md#tracing); nil mints ids
	// for the targets' trace context and exports nothing.
	Tracer trace.Tracer
	// Batch, when set, carries the worker's queue writes beside its claims
	// and releases (queue.Writes.Batch); nil sends each alone.
	Batch *txnbatch.Committer
	// Assign, when set, makes the worker claim and run the runs the leader
	// assigns to this replica (the lean protocol, assigned.go); the engine
	// mirrors keys.ReplicaAssignments(ID) into Assignments.
	Assign *assign.Store
	// Peers, when set, lists the live incarnations that run the lean
	// protocol: a stopping worker gives them its assignments not taken up
	// (assigned_handback.go) rather than the queue path.
	Peers LeanPeers
}

// LeanPeers lists the incarnations of live replicas that advertise the
// lean protocol (leader.Workers).
type LeanPeers interface {
	Lean() (incarnations []string, all bool)
	// Every reports whether every member advertises at least protocol.
	Every(protocol int) bool
}

// The timings a worker takes when Deps leave them zero.
const (
	DefaultClaimLead = 25 * time.Millisecond
	DefaultBackup    = 250 * time.Millisecond
)

// check fills d's defaults and reports every setting a worker cannot work
// with, each naming the field and what it is for.
func (d *Deps) check() error {
	errs := required.Check("worker",
		required.Field{Missing: d.Client == nil, Name: "Client", Role: "the etcd client its queue writes go through"},
		required.Field{Missing: d.Keys.Prefix == "", Name: "Keys", Role: "the layout of the cluster's keys"},
		required.Field{Missing: d.Sessions == nil, Name: "Sessions", Role: "the replica's sessions its slots are held under"},
		required.Field{Missing: d.Slots == nil, Name: "Slots", Role: "the semaphore its claims go through"},
		required.Field{Missing: d.Executor == nil, Name: "Executor", Role: "what runs the targets"},
		required.Field{Missing: d.Queue == nil, Name: "Queue", Role: "the view of queued runs"},
		required.Field{Missing: d.Specs == nil, Name: "Specs", Role: "the copy of the job specs runs start with"},
		required.Field{Missing: d.Config == nil, Name: "Config", Role: "the current configuration"},
		required.Field{Missing: d.Metrics == nil, Name: "Metrics", Role: "the engine's metrics"},
	)
	if err := keys.CheckID(d.ID); err != nil {
		errs = append(errs, fmt.Errorf("worker: %w", err))
	}
	errs = append(errs, required.NotNegative("worker",
		required.Duration{Name: "ClaimLead", Value: d.ClaimLead},
		required.Duration{Name: "Backup", Value: d.Backup})...)
	required.Or(&d.Clock, clockwork.NewRealClock())
	required.Or(&d.Log, slog.New(slog.DiscardHandler))
	required.Or(&d.ClaimLead, DefaultClaimLead)
	required.Or(&d.Backup, DefaultBackup)
	return errors.Join(errs...)
}
