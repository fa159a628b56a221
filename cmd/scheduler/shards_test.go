package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
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

// wideJobs: 256 shards of a second's work each, retried up to twice (a
// shard lost with the killed replica, and again on a survivor whose session
// a loaded CI machine starves), and a job chained after the tick. The
// shards call target, an HTTP server of the test's that answers after a
// second: as commands (each started by a supervisor, docs/design-edges.md)
// 162 processes ran at once, the load average passed 130 on two cores, and
// the test failed alone.
func wideJobs(target string) string {
	return fmt.Sprintf(`worker:
  max_parallel: 64
jobs:
  - name: wide
    schedule: "0 0 1 1 *"
    catch_up: none
    shards: 256
    history_limit: 1000
    retries: {max: 2, backoff: 100ms}
    http: {url: %q}
  - name: after
    schedule: "0 0 1 1 *"
    catch_up: none
    after: {job: wide, on: [succeeded]}
    http: {url: %q}
`, target, target)
}

// A tick of 256 shards on three replicas, one SIGKILLed while it holds
// shards: its shards are recorded lost and retried on the others, and the
// tick fans in once, succeeded, after the retries: its fan-in key was
// written by its authorization and 256 final ends, and the chained job ran.
func TestShardsOfAKilledProcessAreRetriedAndFannedInOnce(t *testing.T) {
	etcd := etcdtest.Start(t)
	// A 6 s session TTL: under -race with the other packages' tests beside
	// it, CI starved both survivors past a 2 s TTL on every attempt, and the
	// tick was recorded lost though the kill was the only fault meant.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(target.Close)
	cfg := writeConfigTTL(t, etcd.Endpoints()[0], "/shards-kill/", 6*time.Second, wideJobs(target.URL))
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b", "c"} {
		procs[id] = startProc(t, id, cfg)
	}
	ctx := context.Background()
	var leader *proc
	poll.For(t, 30*time.Second, "a leader", func() bool {
		leader = procs[procs["a"].leaderID()]
		return leader != nil
	})
	// A loaded CI machine once answered etcd_unavailable (etcd slower than
	// 5 s), and once not within the client's 10 s: try again, under one
	// idempotency key, so a trigger applied with its answer lost is not a
	// second tick.
	var tick client.Triggered
	var err error
	poll.Until(t, 60*time.Second, "the trigger to be accepted", func() (bool, string) {
		tick, err = leader.api.Trigger(ctx, "wide", nil, "kill-test")
		again := client.IsCode(err, "etcd_unavailable") || errors.Is(err, context.DeadlineExceeded)
		if again {
			t.Logf("trigger: %v; trying again", err)
		}
		return !again, fmt.Sprint(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	var victim *proc
	poll.For(t, 30*time.Second, "shards running on a replica that does not lead", func() bool {
		slots, err := leader.api.Slots(ctx)
		if err != nil {
			return false
		}
		for _, s := range slots {
			if s.Job == "wide" && s.Holder != leader.id && procs[s.Holder] != nil {
				victim = procs[s.Holder]
				return true
			}
		}
		return false
	})
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	var view client.Run
	if !poll.Within(120*time.Second, func() bool {
		view, err = leader.api.Run(ctx, tick.RunID)
		return err == nil && view.State == client.StateFinished
	}) {
		logUnfinishedTick(t, view, err, procs)
		t.Fatalf("the tick's fan-in: not within 2m0s (%s killed)", victim.id)
	}
	recs, err := leader.api.Runs(ctx, "wide", 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	if view.Outcome != "succeeded" || len(view.Shards) != 256 {
		for _, r := range recs {
			if r.Outcome != "succeeded" {
				t.Logf("%s attempt %d: %s on %s: %s (before: %+v)", r.RunID, r.Attempt, r.Outcome, r.Holder, r.Error, r.Previous)
			}
		}
		t.Fatalf("tick %s: %s with %d shards, want succeeded with 256", tick.RunID, view.Outcome, len(view.Shards))
	}
	lost := 0
	for _, r := range recs {
		if r.Outcome != "succeeded" {
			t.Errorf("%s: %s, want succeeded", r.RunID, r.Outcome)
		}
		if r.Attempt > 1 {
			lost++
		}
	}
	if len(recs) != 256 || lost == 0 {
		t.Errorf("%d shard records, %d retried; want 256, some retried after the kill of %s", len(recs), lost, victim.id)
	}
	cli := etcdtest.NewClient(t, etcd.Endpoints())
	resp, err := cli.Get(ctx, keys.New("/shards-kill/").FanIn("wide", tick.RunID))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 257 {
		t.Errorf("fan-in key: %v, %v; want version 257 (authorization and 256 final ends)", resp, err)
	}
	poll.For(t, 30*time.Second, "the chained run", func() bool {
		r, err := leader.api.Run(ctx, runs.ChainID("after", tick.RunID))
		return err == nil && r.State == client.StateFinished
	})
	t.Logf("%d shards lost with %s and retried", lost, victim.id)
}

// logUnfinishedTick logs what a tick that did not fan in was waiting for:
// its shards not finished, by state and attempt, and every process's
// warnings and errors (a CI machine's failure is read from its log).
func logUnfinishedTick(t *testing.T, view client.Run, err error, procs map[string]*proc) {
	t.Helper()
	t.Logf("tick %s: state %q, %d shards, last error %v", view.RunID, view.State, len(view.Shards), err)
	for _, s := range view.Shards {
		if s.State != client.StateFinished {
			t.Logf("shard %d (%s): %s, attempt %d", s.Shard, s.RunID, s.State, s.Attempt)
		}
	}
	for id, p := range procs {
		n := 0
		for _, r := range p.logs.Records() {
			if lvl, _ := r["level"].(string); (lvl == "WARN" || lvl == "ERROR") && n < 60 {
				t.Logf("%s: %v", id, r)
				n++
			}
		}
		for _, line := range p.logs.Other() {
			t.Logf("%s: %s", id, line)
		}
	}
}
