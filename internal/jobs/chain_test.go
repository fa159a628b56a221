package jobs_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A chain A (@every 1s) -> B over 30 ticks, through a leader handoff and a
// worker crash: every succeeded A run has exactly one B run, and every B
// run has its succeeded A.
func TestChainedRunsOncePerUpstreamRun(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	a := httpJob("a", "@every 1s", w.url("sleep=600ms"))
	a.Retries.Max = 1
	b := httpJob("b", "@yearly", w.url("sleep=300ms"))
	b.MaxConcurrency = 3
	b.Retries.Max = 1
	b.After = &config.After{Job: "a", On: []string{"succeeded"}}
	cfg := newConfig(a, b)
	nodes := etcd.nodes(cfg, "n1", "n2", "n3")
	first := leaderOf(t, nodes)
	// Ticks of a that reached the target.
	ticks := func() int { return len(w.finished("a")) }

	// A handoff at tick 10. The deadlines are generous: ten 1s ticks took
	// over 30s once in CI, under the load of the packages beside this one.
	poll.For(t, 90*time.Second, "ten ticks of a", func() bool { return ticks() >= 10 })
	first.stop(5 * time.Second)
	second := leaderOf(t, except(nodes, first))

	// A worker crash after tick 20, while it holds a run of a.
	var crashed *node
	poll.For(t, 90*time.Second, "a run of a held by a worker, after tick 20", func() bool {
		if ticks() < 20 {
			return false
		}
		for _, s := range second.held(t) {
			if s.Job == "a" && s.Holder != second.id {
				crashed = byID(t, nodes, s.Holder)
				return true
			}
		}
		return false
	})
	crashed.crash()
	crashedAt := ticks()
	survivor := second
	poll.For(t, 90*time.Second, "thirty ticks", func() bool { return ticks() >= 30 })
	// Stop a, then wait for the chain to settle: no a or b queued or running.
	cfg2 := newConfig(b)
	cfg2.Jobs = append(cfg2.Jobs, cfg.Jobs[0])
	cfg2.Jobs[1].Paused = true
	survivor.setConfig(cfg2)
	// Drained when, at one revision, neither job has a queue entry or a
	// slot: an assigned run of a is in no queue (docs/protocol.md) but
	// holds its slot until the transaction that records it and queues its
	// b run, so a read of both at once never falls between the two.
	layout := keys.New(testPrefix)
	poll.For(t, 60*time.Second, "nothing of a or b queued or running", func() bool {
		var gets []clientv3.Op
		for _, job := range []string{"a", "b"} {
			gets = append(gets, clientv3.OpGet(layout.JobQueue(job), clientv3.WithPrefix(), clientv3.WithCountOnly()),
				clientv3.OpGet(layout.JobSlots(job), clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		resp, err := survivor.client.Txn(t.Context()).Then(gets...).Commit()
		if err != nil {
			return false
		}
		for _, r := range resp.Responses {
			if r.GetResponseRange().Count > 0 {
				return false
			}
		}
		return true
	})

	as := records(t, survivor.client, "a")
	bs := records(t, survivor.client, "b")
	downstream := map[string][]string{} // a run id -> b run ids
	for _, r := range bs {
		if r.Trigger != runs.Chain && !(r.Trigger == runs.Retry && r.UpstreamRunID != "") {
			t.Errorf("b run %s has trigger %s", r.RunID, r.Trigger)
		}
		up, ok := as[r.UpstreamRunID]
		switch {
		case !ok:
			t.Errorf("b run %s names upstream %q, which has no record", r.RunID, r.UpstreamRunID)
		case up.Outcome != runs.Succeeded:
			t.Errorf("b run %s follows %s, which ended %s", r.RunID, up.RunID, up.Outcome)
		}
		if r.RunID != runs.ChainID("b", r.UpstreamRunID) {
			t.Errorf("b run id %s is not derived from its upstream %s", r.RunID, r.UpstreamRunID)
		}
		downstream[r.UpstreamRunID] = append(downstream[r.UpstreamRunID], r.RunID)
	}
	succeeded := 0
	for id, r := range as {
		if r.Outcome != runs.Succeeded {
			continue
		}
		succeeded++
		if n := len(downstream[id]); n != 1 {
			t.Errorf("succeeded a run %s has %d b runs, want 1", id, n)
		}
	}
	// The witness: no b run reached the target twice under one attempt.
	seen := map[string]bool{}
	for _, h := range w.finished("b") {
		k := h.RunID + "#" + string(rune('0'+h.Attempt))
		if seen[k] {
			t.Errorf("b run %s attempt %d ran twice", h.RunID, h.Attempt)
		}
		seen[k] = true
	}
	if succeeded < 20 {
		t.Errorf("only %d succeeded runs of a in 30 ticks", succeeded)
	}
	t.Logf("%d a records (%d succeeded), %d b records; handoff from %s to %s, %s crashed after %d ticks",
		len(as), succeeded, len(bs), first.id, second.id, crashed.id, crashedAt)
}
