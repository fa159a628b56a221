package jobs

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

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
	for _, d := range []struct {
		option string
		v      time.Duration
	}{{"Lookahead", o.Lookahead}, {"ClaimLead", o.ClaimLead}, {"Backup", o.Backup}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("jobs: %s must not be negative, got %v", d.option, d.v))
		}
	}
	if o.Lookahead == 0 {
		o.Lookahead = leader.NearLookahead
	}
	claimLead := o.ClaimLead
	if claimLead == 0 {
		claimLead = worker.DefaultClaimLead
	}
	if o.Lookahead > 0 && o.Lookahead <= claimLead {
		errs = append(errs, fmt.Errorf("jobs: Lookahead (%v) must be longer than ClaimLead (%v): a run's entry must be queued before its worker claims it", o.Lookahead, claimLead))
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}
