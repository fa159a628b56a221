package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A release whose response is lost because its caller's context ended
// while etcd was slow is read back after that context (as a claim's and a
// keep's are): the slot gone while the lease lives, it applied, and the
// caller is told so, not that its slot was lost. Read under the ended
// context, the read-back failed at once and the worker logged a run that
// succeeded as lost and left it out of its run counts.
func TestALostReleaseResponseIsReadBackAfterItsContext(t *testing.T) {
	p := startProxied(t)
	h, entry, record := p.claimEntry(t)

	p.proxy.SetDelay(0, time.Second)
	relCtx, relCancel := context.WithTimeout(p.ctx, 300*time.Millisecond)
	defer relCancel()
	err := p.sem.Release(relCtx, h, clientv3.OpDelete(entry), clientv3.OpPut(record, "succeeded"))
	p.proxy.SetDelay(0, 0)
	if p.logs.Find("release outcome unknown; reading back") == nil {
		t.Fatalf("the response was not lost, so nothing was read back (err %v); logs: %v", err, p.logs.Records())
	}
	if err != nil {
		t.Fatalf("a release that applied, its answer lost: %v, want it read back as applied", err)
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, ErrReleased) {
		t.Errorf("the held slot ended with %v, want %v", cause, ErrReleased)
	}
	resp, err := p.observer.Get(p.ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the run's record: %v, want written once", resp.Kvs)
	}
}
