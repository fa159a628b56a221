package configdiff

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/etcdsched/scheduler/config"
)

// What the runs of a removed or changed job meet (docs/design-leader.md,
// "What far-ahead entries meet").
const (
	effectRemoved = "running runs finish; its scheduled ticks are withdrawn; manual runs and retries still run"
	effectChanged = "running runs finish with the old spec; scheduled ticks due more than 250ms ahead are planned " +
		"again with the new one; manual runs and retries keep the old spec"
)

// runFields are the fields of a job whose change touches the runs it has
// in the cluster: its target, its limits and its key.
var runFields = []string{"http", "exec", "max_concurrency", "overlap", "queue_limit", "rate", "resources",
	"concurrency_key", "timeout", "retries", "shards", "shard_inputs"}

func compareJobs(old, cur *config.Config, opts Options, secrets map[string]string) []Item {
	names := map[string]bool{}
	for _, j := range old.Jobs {
		names[j.Name] = true
	}
	for _, j := range cur.Jobs {
		names[j.Name] = true
	}
	var out []Item
	for _, n := range slices.Sorted(maps.Keys(names)) {
		oj, cj := old.Job(n), cur.Job(n)
		it := Item{Kind: KindJob, Name: n}
		switch {
		case cj == nil:
			it.Change = Removed
			it.Runs = runsOf(opts.Runs, n, effectRemoved)
		case oj == nil:
			it.Change = Added
		default:
			it.Change = Changed
			it.Fields = withSecrets(compareFields(flatten(oj.Redacted()), flatten(cj.Redacted())), secrets, "jobs."+n+".")
			if len(it.Fields) == 0 {
				continue
			}
			if touchesRuns(it.Fields) {
				it.Runs = runsOf(opts.Runs, n, effectChanged)
			}
		}
		if oj == nil || cj == nil || !sameTicks(oj, cj) {
			it.Ticks = compareTicks(oj, cj, opts.Now, opts.Now.Add(opts.Window))
		}
		out = append(out, it)
	}
	return out
}

// touchesRuns says whether a field of the target, limits or key changed.
func touchesRuns(fields []Field) bool {
	for _, f := range fields {
		top, _, _ := strings.Cut(f.Path, ".")
		top, _, _ = strings.Cut(top, "[")
		if slices.Contains(runFields, top) {
			return true
		}
	}
	return false
}

func runsOf(counts map[string]RunCounts, job, effect string) *Runs {
	c, ok := counts[job]
	if !ok || c.Running+c.Queued == 0 {
		return nil
	}
	return &Runs{RunCounts: c, Effect: effect}
}

// sameTicks says whether two versions of a job tick alike: the fields that
// decide its ticks are equal.
func sameTicks(a, b *config.Job) bool {
	key := func(j *config.Job) string {
		b, _ := json.Marshal([]any{j.ScheduleSpecs(), j.Exclude, j.StartAt, j.EndAt, j.Location().String(), j.Paused})
		return string(b)
	}
	return key(a) == key(b)
}
