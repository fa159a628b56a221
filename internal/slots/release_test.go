package slots

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
)

// A release whose response is lost because its caller's context ended
// while etcd was slow is read back after that context (as a claim's and a
// keep's are): the slot gone while the lease lives, it applied, and the
// caller is told so, not that its slot was lost. Read under the ended
// context, the read-back failed at once and the worker logged a run that
// succeeded as lost and left it out of its run counts.
func TestALostReleaseResponseIsReadBackAfterItsContext(t *testing.T) {
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
	h, err := sem.Claim(ctx, sess, onEntry(Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}}, entry, read.Header.Revision))
	if err != nil {
		t.Fatal(err)
	}

	proxy.SetDelay(0, time.Second)
	relCtx, relCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer relCancel()
	err = sem.Release(relCtx, h, clientv3.OpDelete(entry), clientv3.OpPut(record, "succeeded"))
	proxy.SetDelay(0, 0)
	if logs.Find("release outcome unknown; reading back") == nil {
		t.Fatalf("the response was not lost, so nothing was read back (err %v); logs: %v", err, logs.Records())
	}
	if err != nil {
		t.Fatalf("a release that applied, its answer lost: %v, want it read back as applied", err)
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, ErrReleased) {
		t.Errorf("the held slot ended with %v, want %v", cause, ErrReleased)
	}
	resp, err := observer.Get(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the run's record: %v, want written once", resp.Kvs)
	}
}
