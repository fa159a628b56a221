package target

import (
	"strconv"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// Run is what a target learns about the run it executes (docs/configuration.md#what-a-target-is-told).
type Run struct {
	Job          string // defaults to the job's name when empty
	RunID        string
	Attempt      int
	ScheduledAt  time.Time
	Slot         int
	FencingToken int64
	Holder       string
	// ResourceSlots are the shared-resource slots the run holds, as
	// "name/index". They were created in the same transaction as the job
	// slot, so FencingToken is their token too: a target guarding a shared
	// resource keeps the highest token per resource slot.
	ResourceSlots []string
	// Input is the run's input, a JSON object (docs/api.md): the body of
	// an HTTP target's request, SCHEDULER_INPUT of an exec target's.
	Input []byte
	// TraceParent and TraceState are the W3C trace context of the run's
	// span (docs/design-edges.md#tracing), so the target's logs and spans join its trace.
	TraceParent, TraceState string
	// Shard and Shards say which shard of a sharded job's tick the run is
	// (docs/design-sharded.md); Shards is 0 for any other run.
	Shard, Shards int
}

// field is one value of docs/configuration.md#what-a-target-is-told, named once for both forms so the
// header and the environment variable can never drift apart.
type field struct {
	header, env, value string
}

func (r Run) fields() []field {
	fs := []field{
		{"X-Scheduler-Job", "SCHEDULER_JOB", r.Job},
		{"X-Scheduler-Run-Id", "SCHEDULER_RUN_ID", r.RunID},
		{"X-Scheduler-Attempt", "SCHEDULER_ATTEMPT", strconv.Itoa(r.Attempt)},
		{"X-Scheduler-Scheduled-At", "SCHEDULER_SCHEDULED_AT", r.ScheduledAt.UTC().Format(runs.TimeFormat)},
		{"X-Scheduler-Slot", "SCHEDULER_SLOT", strconv.Itoa(r.Slot)},
		{"X-Scheduler-Fencing-Token", "SCHEDULER_FENCING_TOKEN", strconv.FormatInt(r.FencingToken, 10)},
		{"X-Scheduler-Holder", "SCHEDULER_HOLDER", r.Holder},
	}
	if len(r.ResourceSlots) > 0 {
		fs = append(fs, field{"X-Scheduler-Resource-Slots", "SCHEDULER_RESOURCE_SLOTS", strings.Join(r.ResourceSlots, ",")})
	}
	if r.Shards > 0 {
		// One header, two variables: a program reads numbers, a log line k/N.
		fs = append(fs,
			field{header: "X-Scheduler-Shard", value: strconv.Itoa(r.Shard) + "/" + strconv.Itoa(r.Shards)},
			field{env: "SCHEDULER_SHARD_INDEX", value: strconv.Itoa(r.Shard)},
			field{env: "SCHEDULER_SHARD_COUNT", value: strconv.Itoa(r.Shards)})
	}
	if r.TraceParent != "" {
		fs = append(fs, field{"traceparent", "TRACEPARENT", r.TraceParent})
	}
	if r.TraceState != "" {
		fs = append(fs, field{"tracestate", "TRACESTATE", r.TraceState})
	}
	return fs
}
