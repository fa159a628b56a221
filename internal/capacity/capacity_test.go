package capacity

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Shard runs count one each, at the peak and in the keys they take (a slot
// and one per resource); a job paused in the file is due never; history
// counts both limits per shard, plus each job's cursor and spec.
func TestShardsResourcesPaused(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`resources: [{name: db, limit: 10}]
jobs:
  - {name: fan, schedule: "0 * * * *", shards: 4, resources: [db], history_limit: 10, skipped_history_limit: 5, exec: {command: [x]}}
  - {name: one, schedule: "0 * * * *", jitter: 0s, exec: {command: [x]}}
  - {name: off, schedule: "0 * * * *", paused: true, exec: {command: [x]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 28, 0, 30, 0, 0, time.UTC)
	rep, err := Estimate(cfg, from, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	one := cfg.Job("one")
	wantHistory := 3*jobKeys + 4*(10+5) + 2*(one.HistoryLimit+one.SkippedHistoryLimit)
	if rep.Runs != 2*5 || rep.Peak.Runs != 5 || !rep.Peak.At.Equal(time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)) ||
		rep.Peak.Keys != 4*2+1 || rep.HistoryKeys != wantHistory || len(rep.Spread) != 2 {
		t.Errorf("report %+v; want 10 runs, a peak of 5 at 01:00 taking 9 keys, %d history keys, 2 jobs to spread", rep, wantHistory)
	}
	if _, err := Estimate(cfg, from, 0); err == nil {
		t.Error("a zero window accepted")
	}
}
