package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// 200 triggers over 20 customers of a job with concurrency_key and
// max_concurrency 1, on two replicas: no two runs of one customer ever
// overlap at the target, runs of different customers do, every run ran,
// and each record names its key. An input that renders no valid key is
// refused.
func TestConcurrencyKeyHoldsPerKey(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	j := httpJob("sync", "@manually", w.url("sleep=20ms"))
	j.ConcurrencyKey = "{{ .Input.customer_id }}"
	j.Overlap = config.OverlapQueue
	j.QueueLimit = 20
	cfg := newConfig(j)
	a := etcd.node("a", cfg)
	b := etcd.node("b", cfg)
	leaderOf(t, []*node{a, b})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keyOf := map[string]string{} // run id -> customer
	for i := range 200 {
		customer := fmt.Sprintf("c-%02d", i%20)
		n := []*node{a, b}[i%2]
		keyOf[n.trigger(t, "sync", `{"customer_id":"`+customer+`"}`)] = customer
	}
	for _, bad := range []string{`{"customer_id":"a/b"}`, `{"customer_id":""}`, `{}`} {
		if _, _, err := a.engine.Trigger(ctx, "sync", jobs.TriggerRequest{Input: []byte(bad)}); !errors.Is(err, jobs.ErrBadConcurrencyKey) {
			t.Errorf("input %s: err %v, want %v", bad, err, jobs.ErrBadConcurrencyKey)
		}
	}
	poll.For(t, 90*time.Second, "200 runs", func() bool { return len(w.finished("sync")) >= 200 })

	hits := w.finished("sync")
	byKey := map[string][]hit{}
	for _, h := range hits {
		byKey[keyOf[h.RunID]] = append(byKey[keyOf[h.RunID]], h)
	}
	for key, hs := range byKey {
		if n := mostAtOnce(hs); n > 1 {
			t.Errorf("key %s: %d runs at once, max_concurrency 1 per key", key, n)
		}
	}
	if n := mostAtOnce(hits); n < 2 {
		t.Errorf("never two runs at once across 20 keys: keys do not run in parallel")
	}
	// The witness counts a request before it answers: the run's record
	// follows its answer.
	var recs map[string]runs.Record
	poll.For(t, 30*time.Second, "200 records", func() bool {
		recs = records(t, etcd.Client(), "sync")
		return len(recs) >= 200
	})
	succeeded := 0
	for id, r := range recs {
		if r.Outcome == runs.Succeeded {
			succeeded++
		}
		if r.ConcurrencyKey != keyOf[id] {
			t.Errorf("%s: record key %q, want %q", id, r.ConcurrencyKey, keyOf[id])
		}
	}
	if succeeded != 200 || len(hits) != 200 {
		t.Errorf("%d records succeeded, %d requests: want 200 of each", succeeded, len(hits))
	}
	t.Logf("200 runs over 20 keys; at most %d at once overall", mostAtOnce(hits))
}
