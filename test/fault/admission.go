package fault

import (
	"slices"
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/test/cluster"
)

// Rate is a resource's rate window: at most Count starts in any interval
// of length Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// Property 6: a rate-limited resource never sees more than count starts in
// any interval of length per, by the witness's clock. Every run that
// reached the target counts (a refused token too: it was admitted). A
// start whose holder was frozen within per before it is excused: a paused
// process can begin a run long after its stamp, the known limit that only
// fencing covers.
func checkRates(h *History, r *Report) {
	for name, rate := range h.Rates {
		users := map[string]bool{}
		for _, j := range h.Jobs {
			if slices.Contains(j.Resources, name) {
				users[j.Name] = true
			}
		}
		var starts []*cluster.Run
		for i := range h.Runs {
			run := &h.Runs[i]
			if !users[run.Job] {
				continue
			}
			if frozenDuring(h, run.Holder, Window{run.Start.Add(-rate.Per), run.Start}) {
				r.ExcusedRate++
				continue
			}
			starts = append(starts, run)
		}
		slices.SortFunc(starts, func(a, b *cluster.Run) int { return a.Start.Compare(b.Start) })
		n, j := 0, 0
		for i := range starts {
			for starts[i].Start.Sub(starts[j].Start) >= rate.Per {
				j++
			}
			if i-j+1 > rate.Count {
				if n++; n <= 5 {
					r.violate("rate: resource %s had %d starts in the %s from %s (count %d): %s", name, i-j+1, rate.Per,
						starts[j].Start.Format("15:04:05.000"), rate.Count, describe(starts[j:i+1]))
				}
				j = i + 1 - rate.Count // report each excess once
			}
		}
		r.RateWindows += n
	}
}

// Property 7: accepted runs of one concurrency key never overlap beyond
// the job's max_concurrency. The key comes from each run's record.
func checkKeys(h *History, jobs map[string]Job, r *Report) {
	for _, j := range h.Jobs {
		if !j.Keyed {
			continue
		}
		byKey := map[string][]span{}
		for _, s := range accepted(h, func(x *cluster.Run) bool { return x.Job == j.Name }) {
			k := h.Records[s.run.RunID].ConcurrencyKey
			byKey[k] = append(byKey[k], s)
		}
		for k, spans := range byKey {
			n := 0
			maxOverlap(spans, j.MaxConcurrency, func(at time.Time, active []*cluster.Run) {
				if n++; n <= 5 {
					r.violate("key: job %s key %q had %d accepted runs at %s (max_concurrency %d): %s",
						j.Name, k, len(active), at.Format("15:04:05.000"), j.MaxConcurrency, describe(active))
				}
			})
			r.KeyViolations += n
		}
	}
}

// keyedLimit is the limit of a keyed slot group ("<job>/<key>") seen by
// the witness's watch: the job's max_concurrency, per key.
func keyedLimit(group string, jobs map[string]Job) int {
	job, key := keys.SplitSlotGroup(group)
	if j, ok := jobs[job]; ok && key != "" {
		return j.MaxConcurrency
	}
	return -1
}
