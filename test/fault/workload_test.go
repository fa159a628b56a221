package fault

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

const prefix = "/fault/"

// startingDeadline is every scheduled job's starting_deadline.
const startingDeadline = 30 * time.Second

// workloadRates are the rate windows of the workload's resources.
var workloadRates = map[string]Rate{"metered": {Count: 4, Per: 2 * time.Second}}

// sharedLimit is the shared resource's limit: below the four slots its two
// jobs may hold (max_concurrency 2 each), so they contend, and above the two
// one of them may hold, so neither starves. At 2, queued (overlap: queue,
// its waiting run first whenever a slot frees) held both for the 10 s after
// a CI run's last heal, every tick of pair (overlap: skip) was skipped, and
// property 5 failed on the workload, not the scheduler.
const sharedLimit = 3

// workload is the job set, with session_ttl ttl: intervals of 1s and
// 500ms, max_concurrency 1 and 2, runs shorter and longer than the TTL,
// one shared resource, one rate-limited resource offered twice its rate,
// a job with a concurrency key whose runs outlast its interval, a job of
// two slots without shared limits whose runs outlast its interval, every
// catch_up policy, retries on some jobs, strict on one (hold_slot: its
// failed attempt keeps the slots for its retry).
//
// Beside them, a job chained after fast (chains), and a notification sink,
// the receiver at sinkURL, for the runs of pair (notified). The exec job
// (beatJob) writes heartbeats into beats; it is not among the jobs
// returned, whose runs the witness sees.
// withShards adds the sharded job; a scenario with replicas of a version
// before sharded jobs leaves it out (their config refuses the field, as a
// rolling upgrade uses a feature once every replica has it).
func workload(ttl time.Duration, w *cluster.Witness, sinkURL, beats string, withShards bool) (string, []Job, map[string]int) {
	long := 3 * ttl // a frozen holder's run outlives its lease
	jobs := []workloadJob{
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
    retries: {max: 1, backoff: 100ms, max_backoff: 1s, hold_slot: true}
    timeout: 5s
    http: {method: POST, url: %q}`, w.URL("sleep=700ms&fail=7"))},
		{Job{Name: "metered", Every: 250 * time.Millisecond, MaxConcurrency: 2, CatchUp: "latest", Resources: []string{"metered"}},
			fmt.Sprintf(`overlap: skip
    resources: [metered]
    timeout: 5s
    http: {method: POST, url: %q}`, w.URL("sleep=100ms"))},
		// Every worker-side path of the lean protocol without shared
		// limits: two slots picked from the view, refusals that join the
		// queue (docs/protocol.md).
		{Job{Name: "wide", Every: time.Second, MaxConcurrency: 2, CatchUp: "latest"},
			fmt.Sprintf(`overlap: queue
    queue_limit: 1
    retries: {max: 1, backoff: 100ms, max_backoff: 1s}
    timeout: 10s
    http: {method: POST, url: %q}`, w.URL("sleep=2500ms&fail=6"))},
		{Job{Name: "keyed", Every: 500 * time.Millisecond, MaxConcurrency: 1, CatchUp: "latest", Keyed: true},
			fmt.Sprintf(`overlap: queue
    queue_limit: 1
    concurrency_key: "{{ .Input.customer_id }}"
    input: {customer_id: c-1001}
    timeout: 5s
    http: {method: POST, url: %q}`, w.URL("sleep=800ms"))},
	}
	var b strings.Builder
	b.WriteString(clusterYAML(ttl))
	fmt.Fprintf(&b, `resources:
  - name: shared
    limit: %d
  - name: metered
    rate: {count: 4, per: 2s}
notify:
  sinks:
    - name: receiver
      url: %s
      on: [succeeded, failed, timed_out, lost, missed]
  max_age: 10m
jobs:
`, sharedLimit, sinkURL)
	out := writeJobs(&b, jobs)
	fmt.Fprintf(&b, `  - name: chained
    schedule: "@yearly"
    max_concurrency: 4
    overlap: queue
    queue_limit: 10
    starting_deadline: 30s
    history_limit: %d
    skipped_history_limit: %d
    retries: {max: 2, backoff: 100ms, max_backoff: 1s}
    timeout: 5s
    after: {job: fast, on: [succeeded]}
    http: {method: POST, url: %q}
`, historyLimit, skippedHistoryLimit, w.URL("sleep=20ms"))
	out = append(out, Job{Name: "chained", MaxConcurrency: 4})
	if withShards {
		b.WriteString(shardedYAML(w))
	}
	b.WriteString(beatYAML(beats))
	return strings.Replace(b.String(), "  - name: pair\n", "  - name: pair\n    notify: [receiver]\n", 1), out, map[string]int{"shared": sharedLimit}
}

// workloadJob is a job of a workload: what the checker knows of it, and
// the rest of its YAML (its limits, retries and target).
type workloadJob struct {
	Job
	yaml string
}

// historyLimit and skippedHistoryLimit are the history limits of the
// workload's jobs (the exec job's aside): small, so that the leader prunes
// their records and the sharded job's fan-ins all through the faults, a
// few seconds behind their runs (a job every 500 ms keeps 5 s of runs),
// and the checker replays every record and fan-in ever written
// (recordlog.go) and checks each delete (pruned.go). With limits of
// 100,000, as before 2026-12-02, nothing was ever pruned under a fault.
const (
	historyLimit        = 10
	skippedHistoryLimit = 3
)

// writeJobs writes jobs into b, each with the workload's starting
// deadline and history limits, and returns them as the checker knows them.
func writeJobs(b *strings.Builder, jobs []workloadJob) []Job {
	var out []Job
	for _, j := range jobs {
		fmt.Fprintf(b, `  - name: %s
    schedule: "@every %s"
    max_concurrency: %d
    catch_up: %s
    starting_deadline: %s
    history_limit: %d
    skipped_history_limit: %d
    %s
`, j.Name, j.Every, j.MaxConcurrency, j.CatchUp, startingDeadline, historyLimit, skippedHistoryLimit, j.yaml)
		j.StartingDeadline = startingDeadline
		out = append(out, j.Job)
	}
	return out
}

// clusterYAML is the cluster and worker settings of every workload.
func clusterYAML(ttl time.Duration) string {
	return fmt.Sprintf(`cluster:
  etcd:
    prefix: %s
    dial_timeout: 2s
  session_ttl: %s
  lease_margin: 1s
worker:
  max_parallel: 16
  shutdown_grace: %s
`, prefix, ttl, shutdownGrace)
}

// chains and notified are what the checker checks of the workload's chain
// and sink.
var (
	chains   = []Chain{{Up: "fast", Down: "chained", On: []runs.Outcome{runs.Succeeded}}}
	notified = Notify{Job: "pair", Events: []runs.Outcome{runs.Succeeded, runs.Failed, runs.TimedOut, runs.Lost, runs.Missed}}
)

// sharded is the workload's sharded job (docs/design-sharded.md), and fanned the
// job chained after its succeeded ticks: checkShards checks them, apart
// from the jobs above.
var sharded = Sharded{Name: "sharded", Every: time.Second, Shards: 4, MaxConcurrency: 1, Chained: "fanned"}

func shardedYAML(w *cluster.Witness) string {
	return fmt.Sprintf(`  - name: %[1]s
    schedule: "@every %[2]s"
    shards: %[3]d
    shard_inputs: [{part: a}, {part: b}]
    max_concurrency: %[4]d
    overlap: skip
    catch_up: latest
    starting_deadline: 30s
    history_limit: %[8]d
    skipped_history_limit: %[9]d
    retries: {max: 1, backoff: 100ms, max_backoff: 1s}
    timeout: 5s
    http: {method: POST, url: %[5]q}
  - name: %[6]s
    schedule: "@yearly"
    max_concurrency: 4
    overlap: queue
    queue_limit: 10
    starting_deadline: 30s
    history_limit: %[8]d
    skipped_history_limit: %[9]d
    timeout: 5s
    after: {job: %[1]s, on: [succeeded]}
    http: {method: POST, url: %[7]q}
`, sharded.Name, sharded.Every, sharded.Shards, sharded.MaxConcurrency, w.URL("sleep=300ms&fail=9"), sharded.Chained, w.URL("sleep=20ms"),
		historyLimit, skippedHistoryLimit)
}
