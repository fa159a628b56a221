package fault

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// The shard checks on a hand-made history of two ticks of a job of three
// shards, one tick succeeded and chained, one with a failed shard: clean,
// it passes; each way a tick can go wrong is reported.
func TestCheckerShards(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	ok, bad := runs.ID("sh", t0), runs.ID("sh", t0.Add(time.Second))
	down := runs.ChainID("after", ok)
	clean := func() *History {
		h := &History{
			Records:   map[string]runs.Record{down: {RunID: down, Job: "after", Outcome: runs.Succeeded}},
			TicksFrom: t0.Add(-time.Second), TicksUntil: t0.Add(time.Second),
			Sharded: []Sharded{{Name: "sh", Every: time.Second, Shards: 3, MaxConcurrency: 1, Chained: "after"}},
			FanIns: map[string]FanIn{
				ok:  {Version: 4, Done: true, Outcome: runs.Succeeded},
				bad: {Version: 4, Done: true, Outcome: runs.Failed},
			},
		}
		for k := range 3 {
			for _, tick := range []string{ok, bad} {
				id := runs.ShardID(tick, k)
				o := runs.Succeeded
				if tick == bad && k == 1 {
					o = runs.Failed
				}
				h.Records[id] = runs.Record{RunID: id, Job: "sh", Outcome: o}
				at, _ := runs.ScheduledAtOf(tick)
				at = at.Add(time.Duration(k) * 100 * time.Millisecond)
				h.Runs = append(h.Runs, cluster.Run{Job: "sh", RunID: id, Attempt: 1, Start: at, End: at.Add(50 * time.Millisecond)})
			}
		}
		return h
	}
	tests := []struct {
		name   string
		breaks func(h *History)
		want   string
	}{
		{"clean", func(*History) {}, ""},
		{"a shard neither ran nor recorded", func(h *History) {
			delete(h.Records, runs.ShardID(ok, 2))
			h.Runs = slices.DeleteFunc(h.Runs, func(r cluster.Run) bool { return r.RunID == runs.ShardID(ok, 2) })
		}, "shards: tick " + ok + ": shards [2] of 3"},
		{"a tick recorded missed as a whole", func(h *History) {
			for k := range 3 {
				delete(h.Records, runs.ShardID(ok, k))
			}
			h.Runs = slices.DeleteFunc(h.Runs, func(r cluster.Run) bool { return strings.HasPrefix(r.RunID, ok+"#") })
			delete(h.FanIns, ok)
			delete(h.Records, down)
			h.Records[ok] = runs.Record{RunID: ok, Job: "sh", Outcome: runs.Missed}
		}, ""},
		{"a second fan-in", func(h *History) { h.FanIns[ok] = FanIn{Version: 5, Done: true, Outcome: runs.Succeeded} }, "fan-in: " + ok + " written 5 times"},
		{"a fan-in pruned once done", func(h *History) { h.FanIns[ok] = FanIn{Version: 4, Done: true, Outcome: runs.Succeeded, Pruned: true} }, ""},
		{"a fan-in pruned before it fanned in", func(h *History) {
			h.Records[runs.ShardID(bad, 0)] = runs.Record{RunID: runs.ShardID(bad, 0), Outcome: queuedOutcome}
			h.FanIns[bad] = FanIn{Version: 3, Pruned: true}
		}, "fan-in: " + bad + " deleted before it fanned in"},
		{"a fan-in written again after its prune", func(h *History) { h.FanIns[ok] = FanIn{Version: 5, Done: true, Outcome: runs.Succeeded, Pruned: true} }, "fan-in: " + ok + " written 5 times"},
		{"no fan-in", func(h *History) { h.FanIns[bad] = FanIn{Version: 4} }, "fan-in: every shard of " + bad + " recorded, and no fan-in"},
		{"fan-in before the last shard", func(h *History) {
			h.Records[runs.ShardID(bad, 0)] = runs.Record{RunID: runs.ShardID(bad, 0), Outcome: queuedOutcome}
		}, "fan-in: " + bad + " fanned in (failed) with 2 of 3"},
		{"not the worst outcome", func(h *History) { h.FanIns[bad] = FanIn{Version: 4, Done: true, Outcome: runs.Succeeded} }, "fan-in: " + bad + " says succeeded"},
		{"chained run missing", func(h *History) { delete(h.Records, down) }, "and after@chain-" + ok + " was never queued"},
		{"chained after a failed tick", func(h *History) {
			id := runs.ChainID("after", bad)
			h.Records[id] = runs.Record{RunID: id, Job: "after", Outcome: runs.Succeeded}
		}, "which did not fan in succeeded"},
		{"a shard's retry still queued", func(h *History) { h.Queued = map[string]bool{runs.ShardID(bad, 1): true} },
			"fan-in: " + bad + " fanned in (failed) with 2 of 3"},
		{"two runs of one shard at once", func(h *History) {
			h.Runs = append(h.Runs, cluster.Run{Job: "sh", RunID: runs.ShardID(bad, 0), Attempt: 2, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second)})
		}, "shards: shard 0 of sh had 2 accepted runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := clean()
			tt.breaks(h)
			h.Now = t0.Add(time.Minute)
			r := &Report{}
			checkShards(h, r)
			wantViolation(t, r.Violations, "", tt.want)
		})
	}
}
