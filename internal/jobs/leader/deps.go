package leader

import (
	"errors"
	"fmt"

	"github.com/etcdsched/scheduler/internal/election"
)

// check fills d's defaults and reports every setting the leader cannot
// work with, each naming the field and what it is for.
func (d *Deps) check(term election.Leadership) error {
	var errs []error
	for _, r := range []struct {
		missing     bool
		field, role string
	}{
		{d.Client == nil, "Client", "the etcd client its fenced writes go through"},
		{d.Keys.Prefix == "", "Keys", "the layout of the cluster's keys"},
		{d.Config == nil, "Config", "the current configuration"},
		{d.ConfigChanged == nil, "ConfigChanged", "the signal of a new configuration"},
		{d.Queue == nil, "Queue", "the view of queued runs"},
		{d.Specs == nil, "Specs", "the copy of the job specs"},
		{d.Paused == nil, "Paused", "the view of pause state"},
		{d.Slots == nil, "Slots", "the view of held slots the reaper reads"},
		{d.Finished == nil, "Finished", "the jobs that ended runs, for pruning"},
		{d.Outbox == nil, "Outbox", "the notifications waiting for delivery"},
		{d.Metrics == nil, "Metrics", "the engine's metrics"},
	} {
		if r.missing {
			errs = append(errs, fmt.Errorf("leader: %s is required: %s", r.field, r.role))
		}
	}
	if term.Key == "" || term.Rev == 0 {
		errs = append(errs, fmt.Errorf("leader: the term must name its election key and revision (they fence every write), got key %q, revision %d", term.Key, term.Rev))
	}
	if d.Lookahead < 0 {
		errs = append(errs, fmt.Errorf("leader: Lookahead must not be negative, got %v", d.Lookahead))
	}
	if d.SpecGrace < 0 {
		errs = append(errs, fmt.Errorf("leader: SpecGrace must not be negative, got %v", d.SpecGrace))
	}
	d.defaults()
	return errors.Join(errs...)
}
