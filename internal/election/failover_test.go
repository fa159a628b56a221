package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/netproxy"
	"github.com/etcdsched/scheduler/internal/poll"
)

// Graceful shutdown resigns: the standby leads within 300ms, not a TTL.
func TestResignHandsOverQuickly(t *testing.T) {
	cluster := etcdtest.Start(t)
	ts := newTerms(t)
	a, b := ts.leaderAndStandby(cluster, "a", "b")
	poll.For(t, 20*time.Second, "two election keys", func() bool { return len(electionKeys(t, cluster.Client())) == 2 })
	if got := testutil.ToFloat64(a.elector.metrics.isLeader); got != 1 {
		t.Fatalf("a: scheduler_is_leader = %v, want 1", got)
	}

	stopped := time.Now()
	a.stopElector()
	next := ts.nextStart(20 * time.Second)
	took := next.at.Sub(stopped)
	t.Logf("b leads %s after a's shutdown began", took)
	if next.id != "b" {
		t.Fatalf("%s leads, want b", next.id)
	}
	if took > 300*time.Millisecond {
		t.Errorf("handover took %s, want at most 300ms", took)
	}
	<-a.electorDone
	if a.elector.IsLeader() || testutil.ToFloat64(a.elector.metrics.isLeader) != 0 {
		t.Error("a still reports leadership after shutdown")
	}
	if !b.elector.IsLeader() || testutil.ToFloat64(b.elector.metrics.isLeader) != 1 {
		t.Error("b does not report leadership")
	}
}

// failoverSetup starts a leader "a" whose client goes through a proxy, and a
// standby "b" queued behind it.
func failoverSetup(t *testing.T) (*etcdtest.Cluster, *netproxy.Proxy, *terms, *replica, started) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	ts := newTerms(t)
	a := startReplica(t, []string{proxy.Endpoint()}, "a", ts.lead("a"))
	first := ts.nextStart(20 * time.Second)
	startReplica(t, cluster.Endpoints(), "b", ts.lead("b"))
	poll.For(t, 20*time.Second, "two election keys", func() bool { return len(electionKeys(t, cluster.Client())) == 2 })
	// Resume before the replicas stop (cleanups run last-in first-out).
	t.Cleanup(proxy.Resume)
	return cluster, proxy, ts, a, first
}

// A leader that stops talking to etcd without resigning (a crash, as etcd
// sees it) is replaced within TTL + 1.5s, and its fenced writes fail from
// the revision its key is deleted: one it had in flight when it "crashed"
// fails too when it finally arrives.
func TestCrashedLeaderIsReplacedWithinTTL(t *testing.T) {
	cluster, proxy, ts, a, first := failoverSetup(t)
	if first.id != "a" {
		t.Fatalf("%s leads first, want a", first.id)
	}
	witness := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gone := witness.Watch(ctx, first.l.Key, clientv3.WithRev(first.l.Rev+1))

	fencedPut := func(cli *clientv3.Client, value string) (*clientv3.TxnResponse, error) {
		return cli.Txn(ctx).If(first.l.Fence()).Then(clientv3.OpPut(keys.New(testPrefix).Cursor("j"), value)).Commit()
	}
	if resp, err := fencedPut(witness, "before"); err != nil || !resp.Succeeded {
		t.Fatalf("fenced write of the live leader: %v, %v", resp, err)
	}

	// Fenced writes with a's fence, from a healthy client, through the crash.
	type attempt struct {
		ok  bool
		rev int64
	}
	var attempts []attempt
	stopWriting := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		tick := time.NewTicker(20 * time.Millisecond) // pacing, not synchronisation
		defer tick.Stop()
		for last := false; ; {
			resp, err := fencedPut(witness, "during")
			if err != nil {
				t.Errorf("fenced write: %v", err)
				return
			}
			attempts = append(attempts, attempt{resp.Succeeded, resp.Header.Revision})
			if last {
				return
			}
			select {
			case <-stopWriting:
				last = true // one more, sent after the delete was seen
			case <-tick.C:
			}
		}
	}()

	crashed := time.Now()
	proxy.Pause()
	// a's own write, sent after the crash, reaches etcd only later.
	type result struct {
		resp *clientv3.TxnResponse
		err  error
	}
	late := make(chan result, 1)
	go func() {
		resp, err := fencedPut(a.client, "late")
		late <- result{resp, err}
	}()

	next := ts.nextStart(20 * time.Second)
	took := next.at.Sub(crashed)
	t.Logf("b leads %s after a stopped talking to etcd (ttl %s)", took, testTTL)
	if next.id != "b" {
		t.Fatalf("%s leads, want b", next.id)
	}
	if limit := testTTL + 1500*time.Millisecond; took > limit {
		t.Errorf("failover took %s, want at most %s", took, limit)
	}
	var deleted int64
	for wr := range gone {
		if len(wr.Events) > 0 && wr.Events[0].Type == clientv3.EventTypeDelete {
			deleted = wr.Events[0].Kv.ModRevision
			break
		}
	}
	if deleted == 0 {
		t.Fatal("never saw a's key deleted")
	}
	close(stopWriting)
	writer.Wait()
	before, after := 0, 0
	for _, at := range attempts {
		switch {
		case at.ok && at.rev < deleted:
			before++
		case !at.ok && at.rev >= deleted:
			after++
		default:
			t.Errorf("fenced write succeeded=%v at revision %d; a's key was deleted at %d", at.ok, at.rev, deleted)
		}
	}
	t.Logf("a's fence: %d writes applied before its key was deleted at revision %d, %d refused after", before, deleted, after)
	if before == 0 || after == 0 {
		t.Errorf("want writes on both sides of the delete, got %d before and %d after", before, after)
	}

	proxy.Resume()
	if r := <-late; r.err != nil || r.resp.Succeeded {
		t.Errorf("a's late fenced write: err %v, applied %v; want it refused", r.err, r.err == nil && r.resp.Succeeded)
	}
	resp, err := witness.Get(ctx, keys.New(testPrefix).Cursor("j"))
	if err != nil {
		t.Fatal(err)
	}
	if v := string(resp.Kvs[0].Value); v == "late" {
		t.Errorf("cursor = %q: the crashed leader's write landed", v)
	}
}

// A leader cut off from etcd stops leading (its context is cancelled) before
// any other replica starts: the session ends a margin before the server can
// expire the lease.
func TestPartitionedLeaderStopsBeforeNewLeader(t *testing.T) {
	_, proxy, ts, a, first := failoverSetup(t)
	if first.id != "a" {
		t.Fatalf("%s leads first, want a", first.id)
	}
	cut := time.Now()
	proxy.Pause()
	end := ts.nextEnd(20 * time.Second)
	next := ts.nextStart(20 * time.Second)
	if end.id != "a" || next.id != "b" {
		t.Fatalf("term of %s ended, %s leads; want a, then b", end.id, next.id)
	}
	t.Logf("a's context cancelled %s after the partition (cause: %v); b leads %s after that",
		end.cancelled.Sub(cut), end.cause, next.at.Sub(end.cancelled))
	if end.cancelled.IsZero() || !end.cancelled.Before(next.at) {
		t.Errorf("a's context cancelled at %s, b leads at %s", end.cancelled.Format(time.StampMicro), next.at.Format(time.StampMicro))
	}
	if a.elector.IsLeader() {
		t.Error("partitioned replica still reports leadership")
	}
}

// Deleting the election key (an operator, or a lease etcd expired while the
// session still trusted it) ends the term at once: the lead context is
// cancelled with ErrLeadershipLost, without waiting for the session.
func TestDeletedKeyEndsTheTerm(t *testing.T) {
	cluster := etcdtest.Start(t)
	ts := newTerms(t)
	a := startReplica(t, cluster.Endpoints(), "a", ts.lead("a"))
	first := ts.nextStart(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deleted := time.Now()
	if _, err := cluster.Client().Delete(ctx, first.l.Key); err != nil {
		t.Fatal(err)
	}
	end := ts.nextEnd(20 * time.Second)
	t.Logf("term ended %s after its key was deleted", end.cancelled.Sub(deleted))
	if !errors.Is(end.cause, ErrLeadershipLost) {
		t.Errorf("cause = %v, want %v", end.cause, ErrLeadershipLost)
	}
	// Same session, new key: a term with a new revision.
	next := ts.nextStart(20 * time.Second)
	if next.l.Rev == first.l.Rev || next.l.Lease != first.l.Lease {
		t.Errorf("next term %+v, after %+v", next.l, first.l)
	}
	if !a.elector.IsLeader() {
		t.Error("a does not lead again")
	}
}
