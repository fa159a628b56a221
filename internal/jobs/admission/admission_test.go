package admission

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Every job setting is placed: one that asks for something before a run
// starts is in Of (and sends the job off the lean path), one the lean
// claim honours itself is named so, and the rest say why they ask nothing
// of admission. A setting added to config.Job fails here until it is
// placed, so a new limit cannot be left out of the description and
// silently bypassed by the lean path.
func TestEveryJobSettingIsPlaced(t *testing.T) {
	limited := []config.Resource{{Name: "db", Limit: 2}, {Name: "api", Rate: &config.Rate{Count: 1, Per: config.Duration(time.Second)}}, {Name: "free"}}
	// beyond: setting it asks for what only the queue path's claim takes.
	beyond := map[string]func(j *config.Job){
		"concurrency_key": func(j *config.Job) { j.ConcurrencyKey = "{{.tenant}}" },
		"rate":            func(j *config.Job) { j.Rate = &config.Rate{Count: 1, Per: config.Duration(time.Minute)} },
		"resources":       func(j *config.Job) { j.Resources = []string{"db"} },
		"retries":         func(j *config.Job) { j.Retries.HoldSlot = true },
		"max_runs":        func(j *config.Job) { j.MaxRuns = 3 },
		"shards":          func(j *config.Job) { j.Shards = 2 },
	}
	// lean: honoured by the lean claim or by both paths' worker alike.
	lean := map[string]string{
		"max_concurrency":       "the lean claim compares the job's slot",
		"overlap":               "skip and queue act on the lean claim's refusal (the queue path's skip or entry); replace is beyond",
		"queue_limit":           "a refused run's pending entry waits within it on the queue path",
		"starting_deadline":     "both paths' worker records a run past it missed",
		"paused":                "the leader assigns no tick of a paused job, and both paths' worker skips one",
		"timeout":               "bounds the run once started, on either path",
		"on_shutdown":           "acts on a started run, on either path",
		"history_limit":         "pruning, after the run",
		"skipped_history_limit": "pruning, after the run",
		"notify":                "the run's end, on either path (follow.End)",
		"after":                 "chained runs are triggered runs: the queue path's",
		"pause_on_failure":      "the run's end, on either path",
		"input":                 "what the run is given (a scheduled run's default)",
		"http":                  "the target",
		"exec":                  "the target",
		"name":                  "identity",
		"team":                  "the file's team: labels and default sinks, on either path",
		"shard_inputs":          "each shard's input; shards (beyond) makes the tick many runs",
		"overdue_after":         "the leader's look at the tick after it was due, on either path",
	}
	// schedule: when ticks are due, which the leader's plan decides before
	// either path (late, caught up or jittered ticks are never assigned).
	for _, f := range []string{"schedule", "schedules", "exclude", "start_at", "end_at", "timezone", "jitter", "catch_up"} {
		lean[f] = "when ticks are due: the leader's plan"
	}

	typ := reflect.TypeFor[config.Job]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if name == "-" { // set by the loader, not in the file
			name, _, _ = strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		}
		_, b := beyond[name]
		_, l := lean[name]
		if b == l {
			t.Errorf("job setting %q is placed %s: add it to Of and beyond, or to lean with why it asks nothing of admission",
				name, map[bool]string{true: "twice", false: "nowhere"}[b])
		}
	}
	base := config.Job{Name: "j", Overlap: config.OverlapSkip, MaxConcurrency: 1, Resources: []string{"free"}}
	if why := Of(&base, limited).Beyond(); why != "" {
		t.Fatalf("a plain job with an unlimited resource needs %q", why)
	}
	for name, set := range beyond {
		j := base
		set(&j)
		if Of(&j, limited).Lean() {
			t.Errorf("setting %s leaves the job on the lean path", name)
		}
	}
	for _, o := range []string{config.OverlapQueue, config.OverlapReplace} {
		j := base
		j.Overlap = o
		if got := Of(&j, limited).Lean(); got != (o == config.OverlapQueue) {
			t.Errorf("overlap %s: lean %v", o, got)
		}
	}
	j := base
	j.Resources = []string{"gone"}
	if n := Of(&j, limited); n.Lean() || len(n.Resources) != 0 {
		t.Errorf("an undefined resource: %+v; want off the lean path and no slot taken", n)
	}
	j.Resources = []string{"api", "db", "free"}
	if n := Of(&j, limited); len(n.Resources) != 2 || n.Resources[0].Name != "api" || n.Resources[1].Name != "db" {
		t.Errorf("resources taken: %+v; want api (its window) and db (its slots)", n.Resources)
	}
}
