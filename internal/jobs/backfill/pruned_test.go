package backfill

import (
	"testing"

	"github.com/etcdsched/scheduler/internal/jobs/pruned"
)

// A tick in one of the job's pruned stretches with no record had one (the
// prune deleted it): it is existing, not queued; a tick with no record
// outside them (a paused hour between two stretches) is queued. A value
// that cannot be read counts as covering every tick.
func TestBackfillTakesATickOfAPrunedStretchAsExisting(t *testing.T) {
	for _, tc := range []struct {
		name, stored string
		queued       []string
	}{
		{"5 to 6 and 8", pruned.Stretches{{From: hour(5), To: hour(6)}, {From: hour(8), To: hour(8)}}.Encode(),
			[]string{id(hour(4)), id(hour(7)), id(hour(9))}},
		{"unreadable", "yesterday", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cursor(hour(10))
			e.put(layout.Record("report", id(hour(10))), `{}`)
			e.put(layout.Pruned("report"), tc.stored)
			res, err := e.run(hour(4), hour(12))
			if err != nil {
				t.Fatal(err)
			}
			queued := map[string]bool{}
			for _, q := range tc.queued {
				queued[q] = true
			}
			var existing []string
			for h := 4; h <= 10; h++ {
				if !queued[id(hour(h))] {
					existing = append(existing, id(hour(h)))
				}
			}
			want := Result{Job: "report", From: hour(4), To: hour(12), Queued: tc.queued,
				SkippedExisting: existing, LeftToSchedule: []string{id(hour(11))}}
			if tc.queued == nil {
				want.Queued = []string{}
			}
			if !equal(res, want) {
				t.Fatalf("backfill answered\n%+v\nwant\n%+v", res, want)
			}
		})
	}
}
