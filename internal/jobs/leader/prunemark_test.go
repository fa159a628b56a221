package leader

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Before deleting records, the prune lowers the job's mark to the
// earliest tick it deletes (prunemark.go), never raises it, and writes it
// once a term while its deletes are later: a steady job's rounds cost no
// write. A new term knows nothing of the mark; the mark's ModRevision
// says whether a round wrote it.
func TestPruneMarksTheEarliestTickItDeletes(t *testing.T) {
	j := jobstest.Job("j", "@every 1s")
	j.HistoryLimit = 2
	cfg := jobstest.Config(j)
	cli := etcdtest.Start(t).Client()
	l := newTestLeader(t, cli, "/mark/", cfg, clockwork.NewFakeClock())
	tick := func(s int) time.Time { return time.Date(2026, 12, 2, 1, 0, s, 0, time.UTC) }
	mark := func() (string, int64) {
		resp, err := cli.Get(t.Context(), l.d.Keys.PrunedFrom("j"))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("the mark: %v (%v)", resp.Kvs, err)
		}
		return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
	}
	round := func(l *leader, ticks ...int) {
		t.Helper()
		for _, s := range ticks {
			writeRecord(t, l, tickRecord("j", tick(s), runs.Succeeded))
		}
		if err := l.pruner.pruneJobs(t.Context(), []string{"j"}); err != nil {
			t.Fatal(err)
		}
	}
	round(l, 1, 2, 3, 4, 5) // deletes 1, 2, 3
	first, rev := mark()
	if first != markValue(tick(1)) {
		t.Fatalf("mark %s after the first round, want %s", first, markValue(tick(1)))
	}
	round(l, 6, 7) // deletes 4, 5: the term knows the mark is earlier
	if v, r := mark(); v != first || r != rev {
		t.Errorf("mark %s at revision %d after a later round, want %s unwritten (%d)", v, r, first, rev)
	}
	l.pruner.marks = marks{} // a new term
	round(l, 0, 8, 9)        // a backfilled tick 0 written before 8 and 9: deletes 6, 7, 0
	if v, _ := mark(); v != markValue(tick(0)) {
		t.Errorf("mark %s after deleting tick 0, want it lowered to %s", v, markValue(tick(0)))
	}
	_, rev = mark()
	l.pruner.marks = marks{}
	round(l, 10, 11) // a new term deletes 8, 9
	if v, r := mark(); v != markValue(tick(0)) || r != rev {
		t.Errorf("mark %s at revision %d after a new term deleted later ticks, want %s unwritten (%d)", v, r, markValue(tick(0)), rev)
	}
}
