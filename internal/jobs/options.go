package jobs

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/leader"
	"github.com/etcdsched/scheduler/internal/jobs/worker"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/required"
)

// check fills the options' defaults and reports every one an engine
// cannot work with, each naming the option, and how the timings must
// relate.
func (o *Options) check() error {
	errs := required.Check("jobs",
		required.Field{Missing: o.Client == nil, Name: "Client", Role: "the etcd client"},
		required.Field{Missing: o.Sessions == nil, Name: "Sessions", Role: "the replica's session manager"},
		required.Field{Missing: o.Slots == nil, Name: "Slots", Role: "the replica's semaphore"},
		required.Field{Missing: o.Executor == nil, Name: "Executor", Role: "what runs the targets"},
		required.Field{Missing: o.Config == nil, Name: "Config", Role: "the current configuration"},
	)
	if err := keys.CheckID(o.ID); err != nil {
		errs = append(errs, fmt.Errorf("jobs: %w", err))
	}
	if !strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/") {
		errs = append(errs, fmt.Errorf("jobs: Prefix %q must start and end with \"/\" (cluster.etcd.prefix), so no other cluster's keys share it", o.Prefix))
	}
	errs = append(errs, required.NotNegative("jobs", required.Duration{Name: "Lookahead", Value: o.Lookahead})...)
	required.Or(&o.Lookahead, leader.NearLookahead)
	if o.Lookahead > 0 && o.Lookahead <= worker.DefaultClaimLead {
		errs = append(errs, fmt.Errorf("jobs: Lookahead (%v) must be longer than the worker's claim lead (%v): a run's entry must be queued before its worker claims it", o.Lookahead, worker.DefaultClaimLead))
	}
	required.Or(&o.Clock, clockwork.NewRealClock())
	required.Or(&o.Logger, slog.New(slog.DiscardHandler))
	return errors.Join(errs...)
}
