package jobs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A holder that crashes mid-run: the leader records its run lost (docs/design.md#the-safety-rules,
// rule 7) once the slot's lease is gone, and the retry runs on another
// engine under a new, higher fencing token.
func TestCrashedHolderRunIsLostAndRetried(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("work", jobstest.FarTick(time.Now()), w.url("sleep=4s"))
	job.Retries.Max = 2
	cfg := newConfig(job)
	nodes := etcd.nodes(cfg, "a", "b", "c")
	leader := leaderOf(t, nodes)
	runID := leader.trigger(t, "work", "")
	// Find who holds it, and crash that replica (if it leads, fine: the
	// next leader must do the recording).
	holder, firstToken := slotOf(t, leader, runID)
	crashedAt := time.Now()
	crashed := byID(t, nodes, holder)
	crashed.crash()
	survivor := except(nodes, crashed)[0]

	var retry hit
	poll.For(t, 60*time.Second, "the retry to finish on another engine", func() bool {
		for _, h := range w.finished("work") {
			if h.RunID == runID && h.Attempt == 2 {
				retry = h
				return true
			}
		}
		return false
	})
	if retry.Holder == holder {
		t.Errorf("retry ran on the crashed replica %s", holder)
	}
	if retry.Token <= firstToken {
		t.Errorf("retry token %d not above the lost run's %d", retry.Token, firstToken)
	}
	if lostAfter := retry.Start.Sub(crashedAt); lostAfter > cfg.Cluster.SessionTTL.D()+5*time.Second {
		t.Errorf("retry started %s after the crash", lostAfter)
	}
	final := awaitRecord(t, survivor.client, "work", runID, func(r runs.Record) bool {
		return r.Outcome == runs.Succeeded && r.Attempt == 2
	})
	if len(final.Previous) != 1 {
		t.Fatalf("final record lists %d earlier attempts, want 1: %+v", len(final.Previous), final.Previous)
	}
	if p := final.Previous[0]; p.Attempt != 1 || p.Outcome != runs.Lost || p.Holder != holder || p.FencingToken != firstToken {
		t.Errorf("earlier attempt recorded as %+v, want attempt 1 lost on %s with token %d", p, holder, firstToken)
	}
	t.Logf("run %s held by %s (token %d) crashed; retried by %s (token %d) %s after the crash",
		runID, holder, firstToken, retry.Holder, retry.Token, retry.Start.Sub(crashedAt).Round(time.Millisecond))
	if !strings.Contains(runID, "@manual-") {
		t.Errorf("manual run id %q", runID)
	}
}
