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
)

// check fills the options' defaults and reports every one an engine
// cannot work with, each naming the option, and how the timings must
// relate.
func (o *Options) check() error {
	var errs []error
	for _, r := range []struct {
		missing      bool
		option, role string
	}{
		{o.Client == nil, "Client", "the etcd client"},
		{o.Sessions == nil, "Sessions", "the replica's session manager"},
		{o.Slots == nil, "Slots", "the replica's semaphore"},
		{o.Executor == nil, "Executor", "what runs the targets"},
		{o.Config == nil, "Config", "the current configuration"},
	} {
		if r.missing {
			errs = append(errs, fmt.Errorf("jobs: %s is required: %s", r.option, r.role))
		}
	}
	switch {
	case o.ID == "":
		errs = append(errs, errors.New("jobs: ID is required: the replica's id, the holder of its runs"))
	case strings.Contains(o.ID, "/"):
		errs = append(errs, fmt.Errorf("jobs: ID %q must not contain \"/\": it is the last segment of the replica's keys", o.ID))
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
