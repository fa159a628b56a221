package slots

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The engine's queue entry is rewritten as running in the claim's own
// transaction, with the slot the claim picked: its new ModRevision is the
// slot's token, and a second claim of the entry as it was read changes
// nothing.
func TestClaimAppliesCallerOpsAtomically(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	sem := startSemaphore(t, cli)

	entry := testLayout.Entry("j", "j@1")
	read, err := cli.Put(ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}
	req := func(holder string) Request {
		return onEntry(Request{Job: "j", MaxConcurrency: 2, Value: Value{RunID: "j@1", Holder: holder}}, entry, read.Header.Revision)
	}
	h, err := sem.Claim(ctx, sess, req("a"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, entry)
	if err != nil {
		t.Fatal(err)
	}
	if kv := resp.Kvs[0]; string(kv.Value) != runningOn(h.Slot) || kv.ModRevision != h.Token {
		t.Errorf("entry after its claim: %q at revision %d, want %q at the token %d", kv.Value, kv.ModRevision, runningOn(h.Slot), h.Token)
	}
	keys := keysUnder(t, cli, testPrefix)
	if keys[h.Key()] != h.Token {
		t.Errorf("slot %s has create revision %d, held token %d", h.Key(), keys[h.Key()], h.Token)
	}
	if _, err := sem.Claim(ctx, sess, req("b")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second claim of the same entry: err = %v, want %v", err, ErrConflict)
	}
	if n := len(keysUnder(t, cli, testLayout.Slots())); n != 1 {
		t.Fatalf("%d slot keys after a failed claim, want 1", n)
	}
	if err := sem.Release(ctx, h); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(h.Context()), ErrReleased) {
		t.Errorf("holder context cause = %v, want %v", context.Cause(h.Context()), ErrReleased)
	}
}

// runningOn is a test's running entry: what a claim of slot writes.
func runningOn(slot int) string { return "running on slot " + strconv.Itoa(slot) }

// onEntry makes req a queue run's claim: taken only while entry is as put
// at rev, and writing entry running on the slot taken.
func onEntry(req Request, entry string, rev int64) Request {
	req.If = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entry), "=", rev)}
	req.ThenFor = func(slot int) []clientv3.Op { return []clientv3.Op{clientv3.OpPut(entry, runningOn(slot))} }
	return req
}

// frozenSemaphore has read the (empty) view once and stopped watching, so
// its claims believe every slot is free and only the transaction can tell.
func frozenSemaphore(t *testing.T, cli *clientv3.Client) *Semaphore {
	t.Helper()
	sem, err := New(cli, testLayout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sem.load(ctx); err != nil {
		t.Fatal(err)
	}
	return sem
}

// A claim takes the job slot and the resource slot together or neither,
// judged by the transaction even when the view is stale; a lost race is
// retried from the keys the failed transaction read.
func TestClaimIsAllOrNothingAgainstAStaleView(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	sem := frozenSemaphore(t, cli)

	// Another replica holds the only slot of the resource and slots 0 and 1
	// of the job.
	for _, k := range []string{testLayout.ResourceSlot("db", 0), testLayout.Slot("j", 0), testLayout.Slot("j", 1)} {
		if _, err := cli.Put(ctx, k, `{"run_id":"other"}`); err != nil {
			t.Fatal(err)
		}
	}
	before := keysUnder(t, cli, testPrefix)
	_, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 3, Resources: []Resource{{"db", 1}}, Value: Value{RunID: "j@1"}})
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "resource db") {
		t.Fatalf("err = %v, want %v naming resource db", err, ErrFull)
	}
	if after := keysUnder(t, cli, testPrefix); len(after) != len(before) {
		t.Fatalf("a refused claim wrote keys: %v", after)
	}
	// Without the resource only slot 2 is free, whatever the view believes.
	for range 5 {
		h, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 3, Value: Value{RunID: "j@2"}})
		if err != nil {
			t.Fatal(err)
		}
		if h.Slot != 2 {
			t.Fatalf("claimed slot %d, want 2", h.Slot)
		}
		if err := sem.Release(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 3, Value: Value{RunID: "j@3"}}); err != nil {
		t.Fatalf("claim of the last free slot: %v", err)
	}
	if _, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 3, Value: Value{RunID: "j@4"}}); !errors.Is(err, ErrFull) {
		t.Fatalf("claim with every slot taken: err = %v, want %v", err, ErrFull)
	}
}

// A slot deleted under its holder (here by hand) ends the holder's context
// although the session lives on.
func TestDeletedSlotEndsHolderContext(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	sem := startSemaphore(t, cli)
	h, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, h.Key()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Context().Done():
	case <-ctx.Done():
		t.Fatal("holder context outlived its slot")
	}
	if !errors.Is(context.Cause(h.Context()), ErrLost) {
		t.Errorf("cause = %v, want %v", context.Cause(h.Context()), ErrLost)
	}
	if sess.Err() != nil {
		t.Errorf("session ended too: %v", sess.Err())
	}
	if err := sem.Release(ctx, h); !errors.Is(err, ErrNotOwner) {
		t.Errorf("release of a lost slot: err = %v, want %v", err, ErrNotOwner)
	}
}

// Held, HeldOf, Running, the view's Token and the gauges show a held job
// and resource slot, and nothing once it is released.
func TestListAndMetrics(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	reg := prometheus.NewPedanticRegistry()
	sem, err := New(cli, testLayout, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	runSemaphore(t, sem)
	sess, ctx := sessionFor(t, cli)

	scheduled := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	started := scheduled.Add(time.Second)
	v := Value{RunID: "j@2026-11-22T01:00:00Z", Holder: "replica-a", StartedAt: started, ScheduledAt: scheduled}
	h, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Resources: []Resource{{"db", 3}}, Value: v})
	if err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, "two slots in the view", func() bool { return len(sem.viewList()) == 2 })
	list, err := sem.Held(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("Held = %+v, %v; want two slots", list, err)
	}
	want := []Info{
		{Job: "j", Slot: 0, RunID: v.RunID, Holder: "replica-a", FencingToken: h.Token, StartedAt: started, ScheduledAt: scheduled},
		{Resource: "db", Slot: h.Resources[0].Index, RunID: v.RunID, Holder: "replica-a", FencingToken: h.Token, StartedAt: started, ScheduledAt: scheduled},
	}
	for i := range want {
		if !list[i].StartedAt.Equal(want[i].StartedAt) || !list[i].ScheduledAt.Equal(want[i].ScheduledAt) {
			t.Errorf("List()[%d] times = %v, %v", i, list[i].StartedAt, list[i].ScheduledAt)
		}
		list[i].StartedAt, list[i].ScheduledAt = want[i].StartedAt, want[i].ScheduledAt
		if list[i] != want[i] {
			t.Errorf("List()[%d] = %+v, want %+v", i, list[i], want[i])
		}
	}
	if running, err := sem.Running(ctx); err != nil || !maps.Equal(running, map[string]int{"j": 1}) || sem.ResourceInUse("db") != 1 {
		t.Errorf("in use: jobs %v (%v), resource %d", running, err, sem.ResourceInUse("db"))
	}
	if token, ok := sem.Token(h.Key()); !ok || token != h.Token {
		t.Errorf("Token(%s) = %d, %v; want %d, true", h.Key(), token, ok, h.Token)
	}
	if of, err := sem.HeldOf(ctx, "j"); err != nil || !slices.Equal(of, list[:1]) {
		t.Errorf("HeldOf(j) = %+v, %v; want Held's row of j %+v", of, err, list[0])
	}
	if of, err := sem.HeldOf(ctx, "db"); err != nil || len(of) != 0 {
		t.Errorf("HeldOf(db), a resource's name = %+v, %v; want none", of, err)
	}
	gauges := func(job, res int) string {
		return strings.NewReplacer("JOB", string(rune('0'+job)), "RES", string(rune('0'+res))).Replace(`
# HELP scheduler_resource_slots_in_use Shared-resource slots held across the cluster, as seen by this replica's watch.
# TYPE scheduler_resource_slots_in_use gauge
scheduler_resource_slots_in_use{resource="db"} RES
# HELP scheduler_slots_in_use Job slots held across the cluster, as etcd stores them at the scrape.
# TYPE scheduler_slots_in_use gauge
scheduler_slots_in_use{job="j",team=""} JOB
`)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges(1, 1)), "scheduler_slots_in_use", "scheduler_resource_slots_in_use"); err != nil {
		t.Error(err)
	}
	if err := sem.Release(ctx, h); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, "an empty view", func() bool { return len(sem.viewList()) == 0 })
	if token, ok := sem.Token(h.Key()); ok {
		t.Errorf("Token(%s) after the release = %d, held", h.Key(), token)
	}
	if of, err := sem.HeldOf(ctx, "j"); err != nil || len(of) != 0 {
		t.Errorf("HeldOf(j) after the release = %+v, %v", of, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges(0, 0)), "scheduler_slots_in_use", "scheduler_resource_slots_in_use"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "scheduler_claim_duration_seconds"); n != 1 {
		t.Errorf("%d claim duration series", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A claim whose response is lost (it arrives after the caller's deadline)
// is resolved by reading the slot back: the caller gets the slot that was
// created, with its token, and its queue entry rewritten running with it.
func TestLostClaimResponseIsReadBack(t *testing.T) {
	p := startProxied(t)
	sem, proxy, observer, logs, sess, ctx := p.sem, p.proxy, p.observer, p.logs, p.sess, p.ctx
	entry := testLayout.Entry("j", "j@1")
	read, err := observer.Put(ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}

	proxy.SetDelay(0, time.Second)
	claimCtx, claimCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer claimCancel()
	h, err := sem.Claim(claimCtx, sess, onEntry(Request{Job: "j", MaxConcurrency: 3, Value: Value{RunID: "j@1"}}, entry, read.Header.Revision))
	proxy.SetDelay(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if logs.Find("claim outcome unknown; reading back") == nil {
		t.Fatalf("the response was not lost, so nothing was read back; logs: %v", logs.Records())
	}
	keys := keysUnder(t, observer, testPrefix)
	if len(keys) != 2 || keys[h.Key()] != h.Token {
		t.Fatalf("keys after the claim: %v; held %s with token %d", keys, h.Key(), h.Token)
	}
	resp, err := observer.Get(ctx, entry)
	if err != nil {
		t.Fatal(err)
	}
	if kv := resp.Kvs[0]; string(kv.Value) != runningOn(h.Slot) || kv.ModRevision != h.Token {
		t.Errorf("entry after the claim read back: %q at revision %d, want %q at the token %d", kv.Value, kv.ModRevision, runningOn(h.Slot), h.Token)
	}
	if err := sem.Release(ctx, h); err != nil {
		t.Fatal(err)
	}
}
