package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/required"
)

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
	if d.ClaimLead < 0 {
		errs = append(errs, fmt.Errorf("worker: ClaimLead must not be negative, got %v", d.ClaimLead))
	}
	if d.Backup < 0 {
		errs = append(errs, fmt.Errorf("worker: Backup must not be negative, got %v", d.Backup))
	}
	if d.Clock == nil {
		d.Clock = clockwork.NewRealClock()
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.ClaimLead == 0 {
		d.ClaimLead = DefaultClaimLead
	}
	if d.Backup == 0 {
		d.Backup = DefaultBackup
	}
	return errors.Join(errs...)
}
