package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A backfill over a job's pruned history runs no tick again: a job
// keeping two records runs for a while, two backfills of five ticks each
// from before it was first scheduled run (oldest first: the second is
// queued whole, the first's records pruned meanwhile), and a backfill of
// everything since finds every tick that ran existing, its record pruned
// or kept, and queues only the never-run ticks between the chunks and the
// job's first. Without the pruned stretches (leader/prunecover.go) every
// pruned tick was queued and ran again; with one low-water mark of the
// pruned ticks (tried and reverted), the second chunk was refused.
func TestABackfillOverAPrunedHistoryRerunsNoTick(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("tick", "@every 1s", w.url(""))
	job.HistoryLimit = 2
	job.MaxConcurrency = 4
	born := time.Now().Truncate(time.Second)
	n := etcd.node("a", newConfig(job))
	poll.For(t, 60*time.Second, "six runs of tick", func() bool { return len(w.finished("tick")) >= 6 })

	for i, from := range []time.Time{born.Add(-40 * time.Second), born.Add(-35 * time.Second)} {
		res, err := backfillWhenScheduled(t, n, "tick", from, from.Add(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Queued) != 5 {
			t.Fatalf("chunk %d queued %v, want its 5 ticks (existing: %v)", i+1, res.Queued, res.SkippedExisting)
		}
		poll.Until(t, 60*time.Second, "the chunk's runs done and their records pruned", func() (bool, string) {
			recs, ran := records(t, n.client, "tick"), ranIDs(w, "tick")
			for _, id := range res.Queued {
				if _, kept := recs[id]; kept || !ran[id] {
					return false, fmt.Sprintf("%s: ran %v, record kept %v", id, ran[id], kept)
				}
			}
			return true, ""
		})
	}

	ran, last := map[string]bool{}, time.Time{}
	for _, h := range w.finished("tick") {
		ran[h.RunID] = true
		if h.Scheduled.After(last) {
			last = h.Scheduled
		}
	}
	recs := records(t, n.client, "tick")
	pruned := 0
	for id := range ran {
		if _, kept := recs[id]; !kept {
			pruned++
		}
	}
	if pruned < 10 {
		t.Fatalf("only %d of the %d ticks that ran have had their records pruned; the test needs more", pruned, len(ran))
	}
	res, err := backfillWhenScheduled(t, n, "tick", born.Add(-40*time.Second), last)
	if err != nil {
		t.Fatal(err)
	}
	queued, existing := map[string]bool{}, map[string]bool{}
	for _, id := range res.Queued {
		queued[id] = true
	}
	for _, id := range res.SkippedExisting {
		existing[id] = true
	}
	for id := range ran {
		if queued[id] {
			t.Errorf("%s ran, and the backfill queued it again (%d ran, %d records pruned)", id, len(ran), pruned)
		}
		if at, _ := runs.ScheduledAtOf(id); at.Before(last) && !existing[id] {
			t.Errorf("%s ran, but the backfill did not find it existing", id)
		}
	}
	// Before born no leader had taken the job up: those ticks never ran
	// but for the two chunks, and are queued (a backfill that refused
	// everything would pass the checks above).
	for tick := born.Add(-30 * time.Second); tick.Before(born); tick = tick.Add(time.Second) {
		if id := runs.ID("tick", tick); !queued[id] {
			t.Errorf("%s never ran, and the backfill did not queue it (existing: %v)", id, existing[id])
		}
	}
}

// ranIDs are the run ids of job that reached the witness and ended.
func ranIDs(w *witness, job string) map[string]bool {
	out := map[string]bool{}
	for _, h := range w.finished(job) {
		out[h.RunID] = true
	}
	return out
}
