package config

import (
	"encoding/json"
	"maps"
)

// MaxShards bounds shards: a tick's shard entries are written a part at a
// time, but its fan-in stays one key of one tick.
const MaxShards = 256

// Sharded reports whether each tick of the job is several shard runs;
// shards: 1 is an unsharded job in every respect.
func (j *Job) Sharded() bool { return j.Shards > 1 }

// ShardInput is input with shard k's item of shard_inputs merged over it
// (the item's keys win); input itself when the item is absent or empty.
func (j *Job) ShardInput(input json.RawMessage, k int) (json.RawMessage, error) {
	if k < 0 || k >= len(j.ShardInputs) || len(j.ShardInputs[k]) == 0 {
		return input, nil
	}
	merged := map[string]any{}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &merged); err != nil {
			return nil, err
		}
		if merged == nil {
			merged = map[string]any{}
		}
	}
	maps.Copy(merged, j.ShardInputs[k])
	return json.Marshal(merged)
}

func (j *Job) validateShards(p *problems, path string) {
	if j.Shards < 0 || j.Shards > MaxShards {
		p.add(path+".shards", "must be between 1 and %d (or absent: not sharded), got %d", MaxShards, j.Shards)
		return
	}
	if len(j.ShardInputs) > max(j.Shards, 1) {
		if j.Shards == 0 {
			p.add(path+".shard_inputs", "needs shards: set shards to at least %d, one shard an item", len(j.ShardInputs))
			return
		}
		p.add(path+".shard_inputs", "has %d items but the job has %d shards: one item a shard at most", len(j.ShardInputs), j.Shards)
	}
	for k, in := range j.ShardInputs {
		if _, err := json.Marshal(in); err != nil {
			p.add(path+".shard_inputs", "item %d cannot be sent as JSON: %v", k, err)
		}
	}
}
