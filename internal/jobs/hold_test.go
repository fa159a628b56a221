package jobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// retries.hold_slot: run A fails and is retried twice; run B, triggered
// while A's first attempt runs, waits for the job's one slot. With the
// slot kept across A's backoffs, B starts only after A's last attempt, on
// two replicas: the target sees A#1 A#2 A#3 B#1 ..., never B between A's
// attempts, and never two at once.
func TestHoldSlotKeepsTheSlotAcrossRetries(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	j := httpJob("strict", "@manually", w.url("sleep=200ms&status=500"))
	j.Overlap = config.OverlapQueue
	j.QueueLimit = 5
	j.Retries = config.Retries{Max: 2, Backoff: config.Duration(300 * time.Millisecond), MaxBackoff: config.Duration(time.Second), HoldSlot: true}
	cfg := newConfig(j)
	a := etcd.node("a", cfg)
	b := etcd.node("b", cfg)
	leaderOf(t, []*node{a, b})

	runA := a.trigger(t, "strict", "")
	poll.For(t, 10*time.Second, "A's first attempt to start", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.inFlight["strict"] > 0
	})
	runB := b.trigger(t, "strict", "")
	poll.For(t, 20*time.Second, "both runs' three attempts", func() bool { return len(w.finished("strict")) >= 6 })

	var order []string
	for _, h := range w.finished("strict") {
		name := map[string]string{runA: "A", runB: "B"}[h.RunID]
		order = append(order, fmt.Sprintf("%s#%d", name, h.Attempt))
	}
	got := strings.Join(order, " ")
	t.Logf("attempts in start order: %s", got)
	if !strings.HasPrefix(got, "A#1 A#2 A#3 B#1") {
		t.Errorf("attempts in start order %q: another run slipped in between A's attempts", got)
	}
	if n := w.maxConcurrent("strict"); n > 1 {
		t.Errorf("%d runs at once with max_concurrency 1", n)
	}
}

// A holder that dies during the backoff loses the kept slot with its lease
// (docs/design.md#the-safety-rules, rule 7): the retry then claims afresh on another replica and runs.
// Its entry names the fresh slot's token, not the dead hold's, so the
// leader's reaper does not take the running retry for lost: its record is
// written once, by its end (found by the long fault profile: written 3
// times for 2 attempts).
func TestHeldSlotEndsWithItsHolder(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	j := httpJob("strict", "@manually", w.url("sleep=2s&status=500"))
	j.Retries = config.Retries{Max: 1, Backoff: config.Duration(3 * time.Second), MaxBackoff: config.Duration(3 * time.Second), HoldSlot: true}
	cfg := newConfig(j)
	nodes := []*node{etcd.node("a", cfg), etcd.node("b", cfg)}
	leaderOf(t, nodes)
	nodes[0].trigger(t, "strict", "")
	poll.For(t, 10*time.Second, "the first attempt", func() bool { return len(w.finished("strict")) >= 1 })
	first := w.finished("strict")[0]
	for _, n := range nodes {
		if n.id == first.Holder {
			n.crash() // during the backoff, holding the kept slot
		}
	}
	poll.For(t, 20*time.Second, "the retry on the other replica", func() bool { return len(w.finished("strict")) >= 2 })
	retry := w.finished("strict")[1]
	if retry.Attempt != 2 || retry.Holder == first.Holder {
		t.Errorf("retry %+v after first attempt on %s", retry, first.Holder)
	}
	rec := awaitRecord(t, etcd.Client(), "strict", retry.RunID, func(r runs.Record) bool { return r.Attempt == 2 })
	resp, err := etcd.Client().Get(t.Context(), keys.New(testPrefix).Record("strict", retry.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != runs.Failed || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 2 {
		t.Errorf("the retry recorded %s; the run's record written %d times for 2 attempts, want failed, once each",
			rec.Outcome, resp.Kvs[0].Version)
	}
}
