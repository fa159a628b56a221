package config

import (
	"encoding/json"
	"testing"
)

func TestShardInputs(t *testing.T) {
	cfg := mustParse(t, `
jobs:
  - name: reindex
    schedule: "@every 10s"
    shards: 3
    shard_inputs: [{range: a-c}, {range: d-f, deep: true}]
    input: {range: all, mode: full}
    exec: {command: [date]}
  - name: one
    schedule: "@every 10s"
    shards: 1
    exec: {command: [date]}
`)
	j := cfg.Job("reindex")
	if !j.Sharded() || cfg.Job("one").Sharded() {
		t.Fatalf("Sharded: reindex %v, one %v; want true, false", j.Sharded(), cfg.Job("one").Sharded())
	}
	for k, want := range []string{
		`{"mode":"full","range":"a-c"}`,
		`{"deep":true,"mode":"full","range":"d-f"}`,
		`{"mode":"full","range":"all"}`,
	} {
		got, err := j.ShardInput(j.DefaultInput(), k)
		if err != nil {
			t.Fatal(err)
		}
		var a any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("shard %d: input %s: %v", k, got, err)
		}
		if ga, _ := json.Marshal(a); string(ga) != want {
			t.Errorf("shard %d: input %s, want %s", k, got, want)
		}
	}
}
