package fault

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// Restart is one graceful restart of a replica: SIGTERM at Term, the
// process gone at Exit (then started again).
type Restart struct {
	Replica    string
	Term, Exit time.Time
}

// interrupted is the outcome docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts gives a run cut by a graceful
// restart, requeued at once without using a retry.
const interrupted = runs.Interrupted

// CutReport counts the runs a graceful restart cut: attempts whose
// request the witness saw cancelled between their replica's SIGTERM and
// its exit (the run outlived shutdown_grace).
type CutReport struct {
	Runs int
	// Recorded: how etcd recorded each cut attempt ("none" when no record
	// covers it).
	Recorded map[runs.Outcome]int
	// Resumed: the run id reached the witness again after the cut.
	// Interrupted: recorded interrupted (for good). Unresumed: neither,
	// the work the restart lost.
	Resumed, Interrupted, Unresumed int
}

// String is the summary's part: cut_runs=N cut_recorded=o:n,... and the rest.
func (c CutReport) String() string {
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(c.Recorded)) {
		parts = append(parts, fmt.Sprintf("%s:%d", o, c.Recorded[o]))
	}
	rec := strings.Join(parts, ",")
	if rec == "" {
		rec = "n/a"
	}
	return fmt.Sprintf("cut_runs=%d cut_recorded=%s cut_resumed=%d cut_interrupted=%d cut_unresumed=%d",
		c.Runs, rec, c.Resumed, c.Interrupted, c.Unresumed)
}

// A graceful restart loses no work (docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts): every run it cut later ran
// again or is recorded interrupted. Reported in Unenforced, or as a
// violation with History.RequireResumed.
func checkCuts(h *History, r *Report) {
	r.Cuts.Recorded = map[runs.Outcome]int{}
	for _, rs := range h.Restarts {
		for _, run := range h.Runs {
			if run.Rejected || run.Holder != rs.Replica || !run.Cancelled ||
				run.End.Before(rs.Term) || run.End.After(rs.Exit.Add(cancelNotice)) {
				continue
			}
			r.Cuts.Runs++
			_, outcome := recordedEnd(h, run.RunID, run.Attempt)
			if outcome == "" {
				outcome = "none"
			}
			r.Cuts.Recorded[outcome]++
			switch {
			case ranAgain(h, run):
				r.Cuts.Resumed++
			case h.Records[run.RunID].Outcome == interrupted:
				r.Cuts.Interrupted++
			default:
				r.Cuts.Unresumed++
				msg := fmt.Sprintf("restart: %s#%d (token %d) was cut by the restart of %s at %s, recorded %s, and neither ran again nor was recorded %s",
					run.RunID, run.Attempt, run.Token, rs.Replica, rs.Term.Format("15:04:05.000"), outcome, interrupted)
				if h.RequireResumed {
					r.Violations = append(r.Violations, msg)
				} else {
					r.Unenforced = append(r.Unenforced, msg)
				}
			}
		}
	}
}

// ranAgain: another attempt of cut's run id reached the witness after it
// (the same attempt again is G1's "twice").
func ranAgain(h *History, cut cluster.Run) bool {
	for _, run := range h.Runs {
		if run.RunID == cut.RunID && !run.Rejected && run.Start.After(cut.Start) && run.Attempt != cut.Attempt {
			return true
		}
	}
	return false
}
