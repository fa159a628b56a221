package jobs_test

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
)

// GET /api/v1/runs/{id} of a run that took the lean protocol (no queue
// entry) says running while it runs, from its slot, with its holder.
func TestAnAssignedRunIsFoundWhileItRuns(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	n := etcd.node("solo", newConfig(httpJob("slow", "@every 1s", w.url("sleep=3s"))))
	var runID string
	poll.For(t, 30*time.Second, "a run of slow at the target", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for id, holder := range w.reached {
			if holder != "" && id != "" {
				runID = id
				return true
			}
		}
		return false
	})
	poll.For(t, 10*time.Second, "the run found running", func() bool {
		st, err := n.engine.FindRun(t.Context(), runID)
		return err == nil && st.State == "running" && st.Holder == "solo" && st.Job == "slow"
	})
}
