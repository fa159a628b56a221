package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
)

// The timings a worker takes when Deps leave them zero.
const (
	DefaultClaimLead = 25 * time.Millisecond
	DefaultBackup    = 250 * time.Millisecond
)

// check fills d's defaults and reports every setting a worker cannot work
// with, each naming the field and what it is for.
func (d *Deps) check() error {
	var errs []error
	for _, r := range []struct {
		missing     bool
		field, role string
	}{
		{d.Client == nil, "Client", "the etcd client its queue writes go through"},
		{d.Keys.Prefix == "", "Keys", "the layout of the cluster's keys"},
		{d.Sessions == nil, "Sessions", "the replica's sessions its slots are held under"},
		{d.Slots == nil, "Slots", "the semaphore its claims go through"},
		{d.Executor == nil, "Executor", "what runs the targets"},
		{d.Queue == nil, "Queue", "the view of queued runs"},
		{d.Specs == nil, "Specs", "the copy of the job specs runs start with"},
		{d.Config == nil, "Config", "the current configuration"},
		{d.Metrics == nil, "Metrics", "the engine's metrics"},
	} {
		if r.missing {
			errs = append(errs, fmt.Errorf("worker: %s is required: %s", r.field, r.role))
		}
	}
	switch {
	case d.ID == "":
		errs = append(errs, errors.New("worker: ID is required: the replica that holds the runs it executes"))
	case strings.Contains(d.ID, "/"):
		errs = append(errs, fmt.Errorf("worker: ID %q must not contain \"/\": it is the last segment of the replica's keys", d.ID))
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
