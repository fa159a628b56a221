package fault

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

const prefix = "/fault/"

// workload is the job set, with session_ttl ttl: intervals of 1s and
// 500ms, max_concurrency 1 and 2, runs shorter and longer than the TTL,
// one shared resource, every catch_up policy, retries on some jobs.
// The exec job (beatJob) writes heartbeats into beats; it is not among the
// jobs returned, whose runs the witness sees.
func workload(ttl time.Duration, w *cluster.Witness, beats string) (string, []Job, map[string]int) {
	long := 3 * ttl // a frozen holder's run outlives its lease
	jobs := []struct {
		Job
		yaml string
	}{
		{Job{Name: "fast", Every: 500 * time.Millisecond, MaxConcurrency: 1, CatchUp: "latest"},
			fmt.Sprintf(`overlap: skip
    retries: {max: 2, backoff: 100ms, max_backoff: 1s}
    timeout: 5s
    http: {method: POST, url: %q}`, w.URL("sleep=50ms&fail=5"))},
		{Job{Name: "pair", Every: time.Second, MaxConcurrency: 2, CatchUp: "all", Resources: []string{"shared"}},
			fmt.Sprintf(`overlap: skip
    resources: [shared]
    timeout: 10s
    http: {method: POST, url: %q}`, w.URL("sleep=1500ms"))},
		{Job{Name: "long", Every: time.Second, MaxConcurrency: 1, CatchUp: "none"},
			fmt.Sprintf(`overlap: skip
    retries: {max: 1, backoff: 200ms, max_backoff: 1s}
    timeout: %s
    http: {method: POST, url: %q}`, 4*long, w.URL("sleep="+long.String()))},
		{Job{Name: "queued", Every: 500 * time.Millisecond, MaxConcurrency: 2, CatchUp: "latest", Resources: []string{"shared"}},
			fmt.Sprintf(`overlap: queue
    queue_limit: 1
    resources: [shared]
    retries: {max: 1, backoff: 100ms, max_backoff: 1s}
    timeout: 5s
    http: {method: POST, url: %q}`, w.URL("sleep=700ms&fail=7"))},
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
resources:
  - name: shared
    limit: 2
jobs:
`, prefix, ttl, shutdownGrace)
	var out []Job
	for _, j := range jobs {
		fmt.Fprintf(&b, `  - name: %s
    schedule: "@every %s"
    max_concurrency: %d
    catch_up: %s
    starting_deadline: 30s
    history_limit: 100000
    %s
`, j.Name, j.Every, j.MaxConcurrency, j.CatchUp, j.yaml)
		out = append(out, j.Job)
	}
	b.WriteString(beatYAML(beats))
	return b.String(), out, map[string]int{"shared": 2}
}
