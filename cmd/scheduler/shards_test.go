package main

import (
	"context"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// shardJobs: a job of 3 shards whose shard 2 fails when the input says so.
const shardJobs = `jobs:
  - name: split
    schedule: "0 0 1 1 *"
    catch_up: none
    overlap: queue
    shards: 3
    exec:
      command: ["sh", "-c", "case \"$SCHEDULER_SHARD_INDEX $SCHEDULER_INPUT\" in 2*fail*) exit 3;; esac"]
`

// `scheduler runs` of a sharded job shows one row a tick, with how many
// of its shards ended, and the tick's outcome; `trigger --wait` waits for
// the tick's fan-in.
func TestRunsCommandShowsTicks(t *testing.T) {
	etcd := etcdtest.Start(t)
	p := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], "/shards-cli/", shardJobs))
	srv := []string{"--server", p.url}
	var ids []string // newest first
	for _, input := range []string{`{"day":"mon"}`, `{"day":"tue","fail":1}`} {
		out, errOut, _ := cli(t, append([]string{"trigger", "split", "--wait", "--input", input}, srv...)...)
		id := strings.SplitN(out, "\n", 2)[0]
		if !strings.HasPrefix(id, "split@") {
			t.Fatalf("trigger %s: %q %q", input, out, errOut)
		}
		ids = append([]string{id}, ids...)
	}
	out, errOut, code := cli(t, append([]string{"runs", "split"}, srv...)...)
	header, rows := runsTable(t, out)
	if code != 0 || len(rows) != 2 || len(header) < 3 || header[2] != "SHARDS" {
		t.Fatalf("runs split: exit %d, header %q, %d rows; want SHARDS third and one row a tick\n%s%s", code, header, len(rows), out, errOut)
	}
	for i, want := range []string{"failed", "succeeded"} {
		if rows[i][0] != ids[i] || rows[i][1] != want || rows[i][2] != "3/3" {
			t.Errorf("row %d: %q; want tick %s, %s, 3/3", i, rows[i], ids[i], want)
		}
	}
	view, err := p.api.Run(context.Background(), ids[0])
	if err != nil || view.Outcome != "failed" || len(view.Shards) != 3 || view.Shards[2].Outcome != "failed" || view.Shards[0].Outcome != "succeeded" {
		t.Errorf("GET /api/v1/runs/%s: %+v, %v; want failed, shard 2 failed, shard 0 succeeded", ids[0], view, err)
	}
}
