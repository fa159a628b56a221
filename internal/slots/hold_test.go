package slots

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
)

// A strict retry's keep whose answer is lost (it arrives after the
// caller's deadline) is read back (docs/design.md#the-safety-rules, rule 7): the entry the claim wrote
// has changed under keys still held, so the keep applied, and the caller
// is told so rather than left to release the slot and write the attempt's
// record again. Sent again (as Keep does while its read-back says it did
// not apply: a send still in flight may apply later), the keep writes
// nothing: it compares the entry as the claim left it.
func TestAKeepWhoseAnswerWasLostAppliesOnce(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	cli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	observer := cluster.Client()
	var logs logtest.Sink
	sem, err := New(cli, testLayout, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	runSemaphore(t, sem)
	sess, ctx := sessionFor(t, cli)
	entry, record := testLayout.Entry("j", "j@1"), testLayout.Record("j", "j@1")
	read, err := observer.Put(ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}
	h, err := sem.Claim(ctx, sess, Request{
		Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"},
		If:      []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(entry), "=", read.Header.Revision)},
		ThenFor: func(slot int) []clientv3.Op { return []clientv3.Op{clientv3.OpPut(entry, runningOn(slot))} },
	})
	if err != nil {
		t.Fatal(err)
	}

	end := []clientv3.Op{clientv3.OpPut(entry, "retry holding the slot"), clientv3.OpPut(record, "attempt 1 failed")}
	proxy.SetDelay(0, time.Second)
	keepCtx, keepCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer keepCancel()
	err = sem.Keep(keepCtx, h, entry, end...)
	proxy.SetDelay(0, 0)
	if logs.Find("keep outcome unknown; reading back") == nil {
		t.Fatalf("the answer was not lost, so nothing was read back (err %v); logs: %v", err, logs.Records())
	}
	if err != nil {
		t.Fatalf("a keep that applied, its answer lost: %v; the worker would release the kept slot", err)
	}
	if err := sem.Keep(ctx, h, entry, end...); err == nil {
		t.Errorf("a keep sent again after it applied says it applied again")
	}

	keys := keysUnder(t, observer, testLayout.Slot("j", 0))
	if keys[h.Key()] != h.Token {
		t.Errorf("slot keys after the keep: %v, want %s kept with token %d", keys, h.Key(), h.Token)
	}
	resp, err := observer.Get(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the attempt's record after a lost answer and a second send: %v, want written once", resp.Kvs)
	}
}
