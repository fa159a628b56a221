package fault

import (
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// A run may only be superseded while its holder could not act on the lease
// guard: frozen. Anywhere else the guard should have ended it before the
// lease expired and another holder could take the slot.
//
// One more case is the guard working as it should: the holder's guard
// fired (its session lost while etcd was slow to acknowledge keepalives),
// the holder cancelled the request, recorded the attempt lost and released
// the slot itself, and the newer token arrived before the witness's
// handler had noticed the closed connection. The scheduler had ended the
// run first (its record's ended_at is before the supersession, and the
// witness saw the request cancelled); how soon an HTTP target notices a
// cancel is the target's, and the fencing token covers that gap. Counted
// (CancelledFirst), not a violation, within cancelNotice.
func checkSuperseded(h *History, r *Report) {
	for _, run := range h.Runs {
		if run.Superseded && endedByHolderFirst(h, run) {
			r.CancelledFirst++
			continue
		}
		if run.Superseded && !frozenDuring(h, run.Holder, Window{run.Start, run.SupersededAt}) {
			r.violate("guard: run %s#%d of %s (slot %d, token %d) was still in flight at %s when a newer token took its slot, and %s was not frozen",
				run.RunID, run.Attempt, run.Holder, run.Slot, run.Token, run.SupersededAt.Format("15:04:05.000"), run.Holder)
		}
	}
}

// cancelNotice bounds how long after the holder ended a run the witness may
// still see its cancelled request in flight.
const cancelNotice = 500 * time.Millisecond

// endedByHolderFirst: the holder's record of the attempt ended it before
// the newer token arrived, and the witness saw the request cancelled
// within cancelNotice of that end.
func endedByHolderFirst(h *History, run cluster.Run) bool {
	rec, ok := h.Records[run.RunID]
	if !ok || !run.Cancelled || run.End.IsZero() {
		return false
	}
	ended := time.Time{}
	if rec.Attempt == run.Attempt {
		ended = rec.EndedAt
	}
	for _, a := range rec.Previous {
		if a.Attempt == run.Attempt {
			ended = a.EndedAt
		}
	}
	return !ended.IsZero() && !ended.After(run.SupersededAt) && run.End.Sub(ended) <= cancelNotice
}
