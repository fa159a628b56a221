package backfill

import (
	"testing"

	"github.com/etcdsched/scheduler/internal/runs"
)

// A tick a chunk record names (shed by a worker, docs/design-shed.md) had
// its record: it is existing, not queued, as a tick with a record of its
// own is. A chunk record of the same instant that names other jobs only
// leaves the tick to the backfill; one that cannot be read counts as
// naming it.
func TestBackfillTakesATickInAChunkRecordAsExisting(t *testing.T) {
	e := newEnv(t)
	e.cursor(hour(12))
	chunk := func(w string, at int, jobs ...string) {
		c := runs.ChunkRecord{At: hour(at), EndedAt: hour(at).Add(2e9)}
		for _, j := range jobs {
			c.Runs = append(c.Runs, runs.ShedRun{Job: j, Outcome: runs.Missed, Error: "not started"})
		}
		e.put(layout.ShedRecord(hour(at), w, "g", 0), runs.EncodeChunkRecord(&c))
	}
	chunk("w1.a", 8, "other", "report")
	chunk("w1.a", 9, "other")
	e.put(layout.ShedRecord(hour(10), "w2.b", "g", 3), "{torn")

	res, err := e.run(hour(6), hour(12))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Job: "report", From: hour(6), To: hour(12),
		Queued:          []string{id(hour(6)), id(hour(7)), id(hour(9)), id(hour(11))},
		SkippedExisting: []string{id(hour(8)), id(hour(10))},
		LeftToSchedule:  []string{},
	}
	if !equal(res, want) {
		t.Fatalf("backfill answered\n%+v\nwant\n%+v", res, want)
	}
}
