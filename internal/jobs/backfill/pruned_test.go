package backfill

import (
	"slices"
	"testing"

	"github.com/etcdsched/scheduler/internal/keys"
)

// A tick at or after the job's prune mark, up to its cursor, with no
// record may have run (its record pruned): it is existing, not queued.
// Before the mark, a tick with no record was never authorized; a mark
// that cannot be read counts as the earliest.
func TestBackfillTakesATickOfAPrunedHistoryAsRun(t *testing.T) {
	for _, tc := range []struct {
		name, mark string
		queued     []string
	}{
		{"mark at 7:00", hour(7).Format(keys.InstantFormat), []string{id(hour(5)), id(hour(6))}},
		{"an unreadable mark", "yesterday", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cursor(hour(10))
			e.put(layout.Record("report", id(hour(8))), `{}`)
			e.put(layout.PrunedFrom("report"), tc.mark)
			res, err := e.run(hour(5), hour(12))
			if err != nil {
				t.Fatal(err)
			}
			var existing []string
			for h := 5; h <= 10; h++ {
				if !slices.Contains(tc.queued, id(hour(h))) {
					existing = append(existing, id(hour(h)))
				}
			}
			want := Result{Job: "report", From: hour(5), To: hour(12), Queued: tc.queued,
				SkippedExisting: existing, LeftToSchedule: []string{id(hour(11))}}
			if !equal(res, want) {
				t.Fatalf("backfill answered\n%+v\nwant\n%+v", res, want)
			}
		})
	}
}
