package main

import (
	"context"
	"strconv"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/runs"
)

// byTick folds the shard runs of a sharded job's ticks in list into one
// row a tick, where its first shard appears: the tick's view (GET
// /api/v1/runs/{tick run id}), its outcome the tick's once every shard
// ended.
func byTick(ctx context.Context, c *client.Client, list []client.Run) ([]client.Run, error) {
	var out []client.Run
	seen := map[string]bool{}
	for _, r := range list {
		tick, _, ok := runs.ShardOf(r.RunID)
		if !ok {
			out = append(out, r)
			continue
		}
		if seen[tick] {
			continue
		}
		seen[tick] = true
		view, err := c.Run(ctx, tick)
		if err != nil {
			return nil, err
		}
		if len(view.Shards) == 0 {
			out = append(out, r) // not a tick after all: a run id with a '#'
			continue
		}
		if view.Outcome == "" {
			view.Outcome = runs.Outcome(view.State)
		}
		out = append(out, view)
	}
	return out, nil
}

// shardsCell is "k/N": how many of a tick's N shards ended.
func shardsCell(r client.Run) string {
	if len(r.Shards) == 0 {
		return "-"
	}
	done := 0
	for _, s := range r.Shards {
		if s.State == client.StateFinished {
			done++
		}
	}
	return strconv.Itoa(done) + "/" + strconv.Itoa(len(r.Shards))
}
