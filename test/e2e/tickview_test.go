package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// tickViewConfig: a sharded job whose shards hold for 25s and are retried
// once lost; a job with max_runs 2 every second. Eight shards: each
// shard's first-choice replica follows from its run id, and with three
// shards all three land on the leader about one trigger in 27 (a CI run
// found it, and the test had no replica to kill); with eight, one in 3^8.
const tickViewConfig = `
cluster:
  session_ttl: 3s
jobs:
  - name: split
    schedule: "0 0 1 1 *"
    shards: 8
    retries: {max: 2, backoff: 100ms}
    exec:
      command: ["sleep", "25"]
  - name: twice
    schedule: "@every 1s"
    max_runs: 2
    exec:
      command: ["true"]
`

// What a new user met (issue 34, items 1 to 3), against three replicas:
//   - a sharded tick's view while it runs names its trigger, scheduled
//     time and attempt (not zero values);
//   - a shard whose replica is SIGKILLed shows its retry (running,
//     attempt 2) while it runs elsewhere, not `finished, lost`;
//   - a job whose max_runs are used up has no next run and 0 remaining.
func TestTheTickViewAndNextRunAgainstThreeReplicas(t *testing.T) {
	bin := schedulerBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scheduler.yaml"), []byte(tickViewConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var replicas []*replica
	start := func(id string, more ...string) {
		addr := freeAddr(t)
		flags := append([]string{"--id", id, "--listen", addr, "--data-dir", filepath.Join(dir, id)}, more...)
		replicas = append(replicas, runScheduler(t, bin, "scheduler.yaml", dir, addr, flags))
	}
	start("replica-a")
	endpoints := strings.Join(etcdEndpoints(t, replicas[0]), ",")
	start("replica-b", "--etcd-endpoints", endpoints)
	start("replica-c", "--etcd-endpoints", endpoints)
	c := replicas[0].api(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*patience)
	defer cancel()

	poll.Until(t, patience, "twice's max_runs used up", func() (bool, string) {
		j, err := c.Job(ctx, "twice")
		if err != nil {
			return false, err.Error()
		}
		done := j.RemainingRuns != nil && *j.RemainingRuns == 0 && j.NextRun.IsZero()
		return done, fmt.Sprintf("remaining %v, next run %v", j.RemainingRuns, j.NextRun)
	})

	trig, err := c.Trigger(ctx, "split", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	tick := trig.RunID
	var victim *replica
	var shard string
	poll.Until(t, patience, "the shards of "+tick+" running, one on a replica that does not lead", func() (bool, string) {
		leader, err := c.Leader(ctx)
		if err != nil {
			return false, err.Error()
		}
		slots, err := c.Slots(ctx)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, s := range slots {
			if t, _, ok := runs.ShardOf(s.RunID); ok && t == tick {
				running++
				if s.Holder != leader.ID && victim == nil {
					victim, shard = byID(replicas, s.Holder), s.RunID
				}
			}
		}
		return running == 8 && victim != nil, fmt.Sprintf("%d shards running", running)
	})
	view, err := c.Run(ctx, tick)
	if err != nil {
		t.Fatal(err)
	}
	if view.Trigger != runs.Manual || view.ScheduledAt.IsZero() || view.Attempt < 1 || view.State != client.StateRunning {
		t.Errorf("the running tick's view: trigger %q, scheduled_at %v, attempt %d, state %q; want manual, a time, 1, running",
			view.Trigger, view.ScheduledAt, view.Attempt, view.State)
	}

	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c = except(replicas, victim)[0].api(t)
	poll.Until(t, patience, shard+"'s retry running elsewhere, and the tick's view showing it", func() (bool, string) {
		v, err := c.Run(ctx, tick)
		if err != nil {
			return false, err.Error()
		}
		for _, s := range v.Shards {
			if s.RunID == shard {
				return s.State == client.StateRunning && s.Attempt == 2, fmt.Sprintf("%s: %s %s attempt %d", s.RunID, s.State, s.Outcome, s.Attempt)
			}
		}
		return false, fmt.Sprintf("no %s in %+v", shard, v.Shards)
	})
}

// byID is the replica whose --id is id.
func byID(rs []*replica, id string) *replica {
	for _, r := range rs {
		if strings.Contains(strings.Join(r.cmd.Args, " "), "--id "+id+" ") {
			return r
		}
	}
	return nil
}

// except is rs without r.
func except(rs []*replica, r *replica) []*replica {
	var out []*replica
	for _, x := range rs {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}
