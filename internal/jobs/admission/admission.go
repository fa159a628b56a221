// Package admission is the one description of what a run must get before
// it starts (docs/design-admission.md), read by both run paths. The lean
// path's claim (assign.Claimer.ClaimChunk) compares three things: the run
// has no record, its job's slot is free, and no run of its job waits in
// the queue. A run that needs anything more (a concurrency key's slot, a
// limited or rated resource, a rate window, a slot kept for its retry, a
// run cancelled to make room, a count of runs, shards and their fan-in)
// takes the queue path, whose claim (internal/slots) takes what Of lists.
// The leader assigns a job's ticks only when Of finds nothing beyond the
// lean claim, and the worker claims an assigned run only when Of, read
// from the run's own spec, finds the same: a limit added here is taken by
// the queue path's claim and sends the job off the lean path at once, so
// neither path can bypass it.
package admission

import (
	"fmt"
	"slices"

	"github.com/etcdsched/scheduler/config"
)

// Needs is what a run of a job must get before it starts besides its
// record's absence and its job's slot (max_concurrency).
type Needs struct {
	// Key is the concurrency key's template: the run takes a slot of its
	// key's group instead of the job's.
	Key string
	// Resources are the shared resources the run takes a slot of (Limit)
	// or a place in the window of (Rate), or both.
	Resources []config.Resource
	// Rate is the job's own window.
	Rate *config.Rate
	// HoldSlot: a failed attempt keeps its slot for its retry.
	HoldSlot bool
	// Overlap is the job's policy when its slots are taken: skip and
	// queue act on a refusal; replace cancels a running run first.
	Overlap string
	// MaxRuns counts the job's runs; Shards splits a tick into runs.
	MaxRuns, Shards int
	// Undefined are resources j names that resources does not define (a
	// spec written before its resource was removed): the queue path's
	// claim takes nothing of them, and the lean path leaves them to it.
	Undefined []string
}

// Of is what a run of j needs; resources are the definitions of the
// resources j names (the config's, or those a queue entry's spec carries).
// A resource with neither limit nor rate asks nothing.
func Of(j *config.Job, resources []config.Resource) Needs {
	n := Needs{Key: j.ConcurrencyKey, Rate: j.Rate, HoldSlot: j.Retries.HoldSlot, Overlap: j.Overlap, MaxRuns: j.MaxRuns}
	if j.Sharded() {
		n.Shards = j.Shards
	}
	for _, name := range j.Resources {
		i := slices.IndexFunc(resources, func(r config.Resource) bool { return r.Name == name })
		switch {
		case i < 0:
			n.Undefined = append(n.Undefined, name)
		case resources[i].Limit > 0 || resources[i].Rate != nil:
			n.Resources = append(n.Resources, resources[i])
		}
	}
	return n
}

// Lean reports whether the lean claim is all a run needs.
func (n Needs) Lean() bool { return n.Beyond() == "" }

// Beyond says, in the user's words, the first thing a run needs that the
// lean claim does not compare ("" when there is none).
func (n Needs) Beyond() string {
	switch {
	case n.Key != "":
		return "it has a concurrency key: its runs take the key's slots"
	case n.Rate != nil:
		return "it has a rate: its runs take places in a window"
	case len(n.Resources) > 0:
		return fmt.Sprintf("it uses shared resource %s: its runs take the resource's slots or places", n.Resources[0].Name)
	case len(n.Undefined) > 0:
		return fmt.Sprintf("it names resource %s, which is not defined", n.Undefined[0])
	case n.HoldSlot:
		return "its retries hold the slot: a release keeps it in the retry's queue entry"
	case n.Overlap != config.OverlapSkip && n.Overlap != config.OverlapQueue:
		return fmt.Sprintf("its overlap is %s: a run cancels another through its queue entry", n.Overlap)
	case n.MaxRuns > 0:
		return "it has max_runs: each run is counted in the queue path's transactions"
	case n.Shards > 0:
		return "it is sharded: a tick is many runs and a fan-in"
	}
	return ""
}
