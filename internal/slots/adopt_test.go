package slots

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
)

// putSlot is a claim made outside the semaphore, as the lean protocol's
// chunk makes it: the job slot key under the session's lease.
func putSlot(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID, job string, slot int, runID string) int64 {
	t.Helper()
	v, _ := json.Marshal(Value{RunID: runID, Holder: "w"})
	resp, err := cli.Put(context.Background(), keys.New("/scheduler/").Slot(job, slot), string(v), clientv3.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// An adopted claim is tracked like any while the job slots' view is kept:
// a delete of its key under it ends its context (ErrLost).
func TestAdoptedClaimIsCancelledWhenItsKeyGoes(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	s := startSemaphore(t, cli) // wants the view
	sess := newSession(t, cli, 5*time.Second, time.Second)
	token := putSlot(t, cli, sess.Lease(), "j", 0, "j@1")
	h := s.Adopt(sess, "j", "", 0, token, nil, Value{RunID: "j@1"})
	if _, err := cli.Delete(context.Background(), h.Key()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Context().Done():
		if !errors.Is(context.Cause(h.Context()), ErrLost) {
			t.Errorf("cause %v, want ErrLost", context.Cause(h.Context()))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the adopted claim was not cancelled when its key was deleted")
	}
}

// An adopted claim's release writes its record only while its slot is
// its own: once the slot is gone (its lease expired, and the leader may
// then record the run lost), nothing of the release is applied. A lean
// run's release compares nothing else (docs/protocol.md#keys, "Members").
func TestAnAdoptedClaimsReleaseWritesNothingOnceItsSlotIsGone(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	s := startSemaphore(t, cli)
	token := putSlot(t, cli, sess.Lease(), "j", 0, "j@1")
	h := s.Adopt(sess, "j", "", 0, token, nil, Value{RunID: "j@1"})
	if _, err := cli.Delete(ctx, "/scheduler/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, h, clientv3.OpPut("/scheduler/record", "mine")); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("release of a slot gone: %v, want ErrNotOwner", err)
	}
	if resp, err := cli.Get(ctx, "/scheduler/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("after the release: %v %v, want nothing written", resp.Kvs, err)
	}
	h = s.Adopt(sess, "j", "", 0, putSlot(t, cli, sess.Lease(), "j", 0, "j@2"), nil, Value{RunID: "j@2"})
	if err := s.Release(ctx, h, clientv3.OpPut("/scheduler/record", "mine")); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, "/scheduler/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "mine" {
		t.Fatalf("after the release: %v %v, want only the record written", resp.Kvs, err)
	}
}
