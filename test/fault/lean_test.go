package fault

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// leanWorkload is a workload whose every run takes the lean path
// (docs/protocol.md): jobs of one slot, no shared limit, no retry, no
// chain, runs that end before their next tick. Nothing of it writes a
// queue entry while no fault does, so the replicas keep no view of the job
// slots (docs/design-admission.md#the-slot-view): a held slot deleted
// under its run is not noticed by a view, a frozen holder's runs end by
// its session's guard alone. A failover's ticks that take the queue path
// bring the view back for a while, so the faults also cover it coming and
// going. The exec job (beatJob) is among them.
func leanWorkload(ttl time.Duration, w *cluster.Witness, beats string) (string, []Job, map[string]int) {
	lean := func(url string) string {
		return fmt.Sprintf(`overlap: skip
    timeout: 5s
    http: {method: POST, url: %q}`, url)
	}
	jobs := []workloadJob{
		{Job{Name: "fast", Every: 500 * time.Millisecond, MaxConcurrency: 1, CatchUp: "latest"}, lean(w.URL("sleep=50ms&fail=5"))},
		{Job{Name: "steady", Every: time.Second, MaxConcurrency: 1, CatchUp: "all"}, lean(w.URL("sleep=300ms"))},
		{Job{Name: "tight", Every: 250 * time.Millisecond, MaxConcurrency: 1, CatchUp: "none"}, lean(w.URL("sleep=100ms"))},
		// reloadToggles' second target, on a run that ends before its next tick.
		{Job{Name: "slow", Every: 4 * time.Second, MaxConcurrency: 1, CatchUp: "latest"}, lean(w.URL("sleep=2500ms&fail=6"))},
	}
	var b strings.Builder
	b.WriteString(clusterYAML(ttl) + "jobs:\n")
	out := writeJobs(&b, jobs)
	b.WriteString(beatYAML(beats))
	return b.String(), out, nil
}
