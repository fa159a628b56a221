package leader

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// After a gap, a pass over many jobs has late, caught-up and missed ticks.
// The batched path must write exactly what the one-job path writes, in far
// fewer transactions, and must not write a tick twice when its cursor is
// set back (docs/design.md#the-safety-rules, rule 2).
func TestBatchedPassWritesWhatTheOneJobPathWrites(t *testing.T) {
	ctx := t.Context()
	var jobs []config.Job
	for i, policy := range []string{config.CatchUpNone, config.CatchUpLatest, config.CatchUpAll} {
		for k := range 8 {
			j := jobstest.Job(fmt.Sprintf("gap-%d-%d", i, k), "@every 1s")
			j.CatchUp = policy
			j.StartingDeadline = config.Duration(2500 * time.Millisecond)
			jobs = append(jobs, j)
		}
	}
	cfg := jobstest.Config(jobs...)
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	batched, cli, clock := leaderOn(t, "/batched/", cfg, start)
	single := newTestLeader(t, cli, "/single/", cfg, clock)
	for _, l := range []*leader{batched, single} {
		startTerm(t, l, 0)
	}
	due := make([]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		due[i] = &cfg.Jobs[i]
	}

	clock.Advance(4 * time.Second) // a leader gap: ticks 1s..4s are late or past their deadline
	now := clock.Now()
	batches, rest := batched.splitBatches(due, now)
	if len(rest) != 0 || len(batches) == 0 {
		t.Fatalf("%d jobs left to the one-job path, %d batches; want every job batched", len(rest), len(batches))
	}
	rev0 := revision(t, cli)
	for _, b := range batches {
		if ok, err := batched.ticks.writeBatch(ctx, b); err != nil || !ok {
			t.Fatalf("writeBatch: ok %v, err %v", ok, err)
		}
	}
	txns := revision(t, cli) - rev0
	rev0 = revision(t, cli)
	for _, j := range due {
		if _, err := single.process(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	singleTxns := revision(t, cli) - rev0

	got, want := dump(t, cli, "/batched/"), dump(t, cli, "/single/")
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("batched pass wrote %d keys, the one-job path %d", len(got), len(want))
	}
	missed, queued := 0, 0
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s:\n batched  %q\n one-job  %q", k, got[k], v)
		}
		switch {
		case strings.HasPrefix(k, keys.New("").Runs()):
			missed++
		case strings.HasPrefix(k, keys.New("").Queue()):
			queued++
		}
	}
	if missed == 0 || queued == 0 {
		t.Fatalf("the gap gave %d missed records and %d queue entries; the test needs both", missed, queued)
	}
	if txns >= singleTxns || txns > int64(len(batches)) {
		t.Errorf("batched pass took %d transactions (%d batches), the one-job path %d", txns, len(batches), singleTxns)
	}
	t.Logf("%d queue entries, %d missed records: %d batched transactions, %d one by one", queued, missed, txns, singleTxns)

	// A leader whose view (and etcd's cursor) is set back to before the
	// pass must not write the same ticks again.
	for _, b := range batches {
		for _, it := range b {
			if _, err := cli.Put(ctx, batched.d.Keys.Cursor(it.job.Name), it.known.UTC().Format(runs.TimeFormat)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rev0 = revision(t, cli)
	for _, b := range batches {
		ok, err := batched.ticks.writeBatch(ctx, b)
		if err != nil || ok {
			t.Fatalf("re-writing a written batch: ok %v, err %v; want refused", ok, err)
		}
	}
	if rev := revision(t, cli); rev != rev0 {
		t.Errorf("refused batches changed etcd: revision %d -> %d", rev0, rev)
	}
}

// dump returns the keys under prefix (without it) and their values.
func dump(t *testing.T, cli *clientv3.Client, prefix string) map[string]string {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		k := strings.TrimPrefix(string(kv.Key), prefix)
		if !strings.HasPrefix(k, keys.New("").Election()) {
			out[k] = string(kv.Value)
		}
	}
	return out
}
