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
	jobs := []struct {
		Job
		yaml string
	}{
		{Job{Name: "fast", Every: 500 * time.Millisecond, MaxConcurrency: 1, CatchUp: "latest"}, w.URL("sleep=50ms&fail=5")},
		{Job{Name: "steady", Every: time.Second, MaxConcurrency: 1, CatchUp: "all"}, w.URL("sleep=300ms")},
		{Job{Name: "tight", Every: 250 * time.Millisecond, MaxConcurrency: 1, CatchUp: "none"}, w.URL("sleep=100ms")},
		// reloadToggles' second target, on a run that ends before its next tick.
		{Job{Name: "slow", Every: 4 * time.Second, MaxConcurrency: 1, CatchUp: "latest"}, w.URL("sleep=2500ms&fail=6")},
	}
	var b strings.Builder
	fmt.Fprintf(&b, `cluster:
  etcd:
    prefix: %s
    dial_timeout: 2s
  session_ttl: %s
  lease_margin: 1s
worker:
  max_parallel: 16
  shutdown_grace: %s
jobs:
`, prefix, ttl, shutdownGrace)
	var out []Job
	for _, j := range jobs {
		fmt.Fprintf(&b, `  - name: %s
    schedule: "@every %s"
    max_concurrency: %d
    catch_up: %s
    starting_deadline: %s
    history_limit: 100000
    skipped_history_limit: 100000
    overlap: skip
    timeout: 5s
    http: {method: POST, url: %q}
`, j.Name, j.Every, j.MaxConcurrency, j.CatchUp, startingDeadline, j.yaml)
		j.StartingDeadline = startingDeadline
		out = append(out, j.Job)
	}
	b.WriteString(beatYAML(beats))
	return b.String(), out, nil
}
