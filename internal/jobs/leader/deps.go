package leader

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/required"
)

// check fills d's defaults and reports every setting the leader cannot
// work with, each naming the field and what it is for.
func (d *Deps) check(term election.Leadership) error {
	errs := required.Check("leader",
		required.Field{Missing: d.Client == nil, Name: "Client", Role: "the etcd client its fenced writes go through"},
		required.Field{Missing: d.Keys.Prefix == "", Name: "Keys", Role: "the layout of the cluster's keys"},
		required.Field{Missing: d.Config == nil, Name: "Config", Role: "the current configuration"},
		required.Field{Missing: d.ConfigChanged == nil, Name: "ConfigChanged", Role: "the signal of a new configuration"},
		required.Field{Missing: d.Queue == nil, Name: "Queue", Role: "the view of queued runs"},
		required.Field{Missing: d.Specs == nil, Name: "Specs", Role: "the copy of the job specs"},
		required.Field{Missing: d.Paused == nil, Name: "Paused", Role: "the view of pause state"},
		required.Field{Missing: d.Slots == nil, Name: "Slots", Role: "the view of held slots the reaper reads"},
		required.Field{Missing: d.Finished == nil, Name: "Finished", Role: "the jobs that ended runs, for pruning"},
		required.Field{Missing: d.Chunks == nil, Name: "Chunks", Role: "the index of chunk records, whose ticks the prune counts"},
		required.Field{Missing: d.Outbox == nil, Name: "Outbox", Role: "the notifications waiting for delivery"},
		required.Field{Missing: d.Metrics == nil, Name: "Metrics", Role: "the engine's metrics"},
	)
	if term.Key == "" || term.Rev == 0 {
		errs = append(errs, fmt.Errorf("leader: the term must name its election key and revision (they fence every write), got key %q, revision %d", term.Key, term.Rev))
	}
	errs = append(errs, required.NotNegative("leader",
		required.Duration{Name: "Lookahead", Value: d.Lookahead},
		required.Duration{Name: "SpecGrace", Value: d.SpecGrace})...)
	d.defaults()
	return errors.Join(errs...)
}

// defaults gives the settings left zero their values.
func (d *Deps) defaults() {
	required.Or(&d.Clock, clockwork.NewRealClock())
	required.Or(&d.Log, slog.New(slog.DiscardHandler))
	required.Or(&d.Lookahead, NearLookahead)
	required.Or(&d.SpecGrace, specGrace)
	if d.Last == nil && d.Overdue != nil {
		d.Last, _ = overdue.NewLast(d.Client, d.Keys, d.Overdue, d.Clock) // fails on nil arguments only
	}
}
