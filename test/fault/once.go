package fault

import (
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// G1, at most once per tick: a run id executes at most once per attempt,
// never twice at the witness (checkTwice) and never after its attempt was
// recorded (checkAfterRecord), across leaders, restarts and versions.

// Property 2: no attempt of a run reaches the target twice; a retry has a
// new attempt number.
func checkTwice(h *History, r *Report) {
	seen := map[string]cluster.Run{}
	for _, run := range h.Runs {
		if run.Rejected {
			continue
		}
		k := fmt.Sprintf("%s#%d", run.RunID, run.Attempt)
		if prev, ok := seen[k]; ok {
			r.violate("twice: %s ran twice: token %d on %s at %s and token %d on %s at %s", k,
				prev.Token, prev.Holder, prev.Start.Format("15:04:05.000"), run.Token, run.Holder, run.Start.Format("15:04:05.000"))
			continue
		}
		seen[k] = run
	}
}

// Property 2b: no attempt reaches the target after etcd recorded its end:
// a run recorded skipped or missed that executes anyway, or an attempt
// recorded lost, cancelled or failed that another replica (another
// version) starts again under the same attempt number. An attempt's end is
// its record's ended_at (or its entry among the previous attempts); a
// skipped or missed record without one ends when the witness's watch saw
// it written. The slack is cancelNotice: a request the holder gave up on
// may reach a slow target's handler just after the holder recorded it.
func checkAfterRecord(h *History, r *Report) {
	n := 0
	for _, run := range h.Runs {
		if run.Rejected {
			continue
		}
		ended, outcome := recordedEnd(h, run.RunID, run.Attempt)
		if ended.IsZero() || !run.Start.After(ended.Add(cancelNotice)) {
			continue
		}
		if n++; n <= 5 {
			r.violate("after record: %s#%d started on %s at %s (token %d), %s after its attempt was recorded %s",
				run.RunID, run.Attempt, run.Holder, run.Start.Format("15:04:05.000"), run.Token,
				run.Start.Sub(ended).Round(time.Millisecond), outcome)
		}
	}
}

// recordedEnd is when attempt of run id was recorded ended, and how; zero
// when no record covers that attempt.
func recordedEnd(h *History, id string, attempt int) (time.Time, runs.Outcome) {
	rec, ok := h.Records[id]
	if !ok || rec.Outcome == queuedOutcome {
		return time.Time{}, ""
	}
	for _, a := range rec.Previous {
		if a.Attempt == attempt {
			return a.EndedAt, a.Outcome
		}
	}
	if rec.Attempt != attempt {
		return time.Time{}, ""
	}
	if rec.EndedAt.IsZero() && (rec.Outcome == runs.Skipped || rec.Outcome == runs.Missed) {
		return h.RecordedAt[id], rec.Outcome
	}
	return rec.EndedAt, rec.Outcome
}

// Property 2c: each attempt's end is recorded once: a record's key is
// written once for its last attempt and once for each earlier one it
// lists. A second write of one attempt is two deciders of one run (a
// leader's lost record and the run's own end, which its release writes
// only while its slot lives).
func checkRecordedOnce(h *History, r *Report) {
	for id, n := range h.Writes {
		rec, ok := h.Records[id]
		if ok && n > int64(1+len(rec.Previous)) {
			r.violate("recorded twice: %s written %d times for %d attempts (last %s by %s; revisions: %s)", id, n, 1+len(rec.Previous), rec.Outcome, rec.Holder, writesOf(h.RecordLog, id))
		}
	}
}

// queuedOutcome marks, among the records, a run still queued (pending or
// running) at the end: no record yet.
const queuedOutcome runs.Outcome = "queued"
