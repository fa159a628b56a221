package backfill

import (
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// plan is the ticks of a range sorted by what the snapshot says of them.
type plan struct {
	queue    []time.Time // never authorized: a backfill may queue them
	existing []string    // run ids: recorded, queued, assigned, shed or pruned
	left     []string    // run ids: after the cursor, the schedule's
}

// classify sorts the job's ticks: after the cursor, the schedule runs or
// records them; with a record, an entry, in an assignment, in a chunk
// record or in a pruned stretch (a record deleted), they exist; the rest
// were never authorized.
func (s *snapshot) classify(job string, ticks []time.Time) plan {
	var p plan
	for _, t := range ticks {
		id := runs.ID(job, t)
		switch {
		case t.After(s.cursor):
			p.left = append(p.left, id)
		case s.records[id] || s.entries[id] || s.assigned[t.UnixNano()] || s.shed[t.UnixNano()] || s.pruned.Covers(t):
			p.existing = append(p.existing, id)
		default:
			p.queue = append(p.queue, t)
		}
	}
	return p
}
