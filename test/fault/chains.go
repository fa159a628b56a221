package fault

import (
	"slices"

	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Chain: Down is chained after Up, on outcomes On (docs/notify.md#chains).
type Chain struct {
	Up, Down string
	On       []runs.Outcome
}

// Notify is what the checker needs to count lost notifications: the job
// whose sink listens for Events, and every notification id the receiver
// answered 2xx or that is still waiting in the outbox at the end.
type Notify struct {
	Job    string
	Events []runs.Outcome
	Seen   map[string]bool
}

// checkChains: every upstream run that ended with a listed outcome has its
// downstream run (run, recorded or still queued), and every downstream run
// names an upstream that ended so. Ids are derived from the upstream's, so
// two downstream runs of one upstream would be one id run twice, which
// checkTwice reports; here a record whose upstream does not match is one.
func checkChains(h *History, r *Report) {
	ran := map[string]bool{}
	for _, run := range h.Runs {
		ran[run.RunID] = true
	}
	for _, c := range h.Chains {
		missing := 0
		for id, rec := range h.Records {
			if rec.Job == c.Up && slices.Contains(c.On, rec.Outcome) {
				down := runs.ChainID(c.Down, id)
				if _, ok := h.Records[down]; !ok && !ran[down] {
					if missing++; missing <= 5 {
						r.violate("chain: %s ended %s, and %s was never queued", id, rec.Outcome, down)
					}
				}
			}
			if rec.Job != c.Down {
				continue
			}
			r.ChainRuns++
			up, ok := h.Records[rec.UpstreamRunID]
			switch {
			case rec.Trigger != runs.Chain && rec.Trigger != runs.Retry:
				r.violate("chain: %s of the chained job %s has trigger %s", id, c.Down, rec.Trigger)
			case !ok || up.Job != c.Up || !slices.Contains(c.On, up.Outcome):
				r.violate("chain: %s names upstream %q, which did not end with one of %v", id, rec.UpstreamRunID, c.On)
			case id != runs.ChainID(c.Down, rec.UpstreamRunID):
				r.violate("chain: %s is not the id derived from its upstream %s", id, rec.UpstreamRunID)
			}
		}
		if missing > 5 {
			r.violate("chain: %d more upstream runs of %s without their %s run", missing-5, c.Up, c.Down)
		}
	}
}

// checkNotifications: every final record of the notified job with an event
// its sink wants was notified (delivered, or still waiting to be).
func checkNotifications(h *History, r *Report) {
	if h.Notify.Job == "" {
		return
	}
	lost := 0
	for id, rec := range h.Records {
		if rec.Job != h.Notify.Job || !slices.Contains(h.Notify.Events, rec.Outcome) {
			continue
		}
		nid := notify.ID(id, rec.Attempt, string(rec.Outcome))
		if h.Notify.Seen[nid] {
			r.Notified++
			continue
		}
		if lost++; lost <= 5 {
			r.violate("notifications: %s was recorded %s, and notification %s was neither delivered nor waiting", id, rec.Outcome, nid)
		}
	}
	if lost > 5 {
		r.violate("notifications: %d more lost", lost-5)
	}
}
