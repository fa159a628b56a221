package jobs_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A leader killed while notifications wait in the outbox: the next leader
// delivers every one of them.
func TestNextLeaderDeliversPendingNotifications(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusServiceUnavailable)
	job := httpJob("fails", "@yearly", w.url("status=500"))
	job.MaxConcurrency = 4
	cfg := newConfig(job)
	rcv.notifies(cfg, "failed")
	nodes := etcd.nodes(cfg, "a", "b", "c")
	old := leaderOf(t, nodes)
	for range 4 {
		old.trigger(t, "fails", "")
	}
	poll.For(t, 30*time.Second, "four notifications pending, each refused at least once", func() bool {
		refused := map[string]bool{}
		for _, d := range rcv.deliveries(false) {
			refused[d.ID] = true
		}
		return outbox(t, old.client) == 4 && len(refused) == 4
	})
	old.crash()
	killedAt := time.Now()
	rcv.answer(http.StatusOK)
	next := leaderOf(t, except(nodes, old))
	poll.For(t, 60*time.Second, "the next leader to deliver them", func() bool {
		return outbox(t, next.client) == 0 && len(rcv.deliveries(true)) >= 4
	})
	seen := map[string]bool{}
	for _, d := range rcv.deliveries(true) {
		if seen[d.ID] {
			t.Errorf("notification %s delivered twice", d.ID)
		}
		seen[d.ID] = true
		if d.At.Before(killedAt) {
			t.Errorf("notification %s delivered before the leader was killed", d.ID)
		}
	}
	for _, r := range finalRecords(t, next.client, "fails", runs.Failed) {
		if !seen[notify.ID(r.RunID, r.Attempt, "failed")] {
			t.Errorf("failed run %s: notification not delivered by the next leader", r.RunID)
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d notifications delivered, want 4", len(seen))
	}
}

// A worker that crashes mid-run: the leader's lost record and its
// notification are written by one transaction, and delivered once.
func TestLostRecordAndItsNotificationTogether(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusServiceUnavailable)
	cfg := newConfig(httpJob("work", "@yearly", w.url("sleep=30s")))
	rcv.notifies(cfg, "lost")
	nodes := etcd.nodes(cfg, "a", "b", "c")
	lead := leaderOf(t, nodes)
	runID := lead.trigger(t, "work", "")
	holder, _ := slotOf(t, lead, runID)
	crashed := byID(t, nodes, holder)
	crashed.crash()
	survivor := except(nodes, crashed)[0]
	layout := keys.New(testPrefix)
	id := notify.ID(runID, 1, "lost")
	var rec, note *clientv3.GetResponse
	poll.For(t, 60*time.Second, "the lost record", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := survivor.client.Txn(ctx).Then(
			clientv3.OpGet(layout.Record("work", runID)),
			clientv3.OpGet(layout.Notification("ops", id)),
		).Commit()
		if err != nil {
			return false
		}
		rec, note = (*clientv3.GetResponse)(resp.Responses[0].GetResponseRange()), (*clientv3.GetResponse)(resp.Responses[1].GetResponseRange())
		return len(rec.Kvs) == 1
	})
	if len(note.Kvs) != 1 {
		t.Fatalf("lost record without its notification %s in the outbox", id)
	}
	if rec.Kvs[0].ModRevision != note.Kvs[0].CreateRevision {
		t.Errorf("record written at revision %d, its notification at %d: not one transaction", rec.Kvs[0].ModRevision, note.Kvs[0].CreateRevision)
	}
	rcv.answer(http.StatusOK)
	poll.For(t, 30*time.Second, "the notification delivered", func() bool {
		return outbox(t, survivor.client) == 0 && len(rcv.deliveries(true)) == 1
	})
	d := rcv.deliveries(true)[0]
	if d.ID != id || d.Event != "lost" || d.Record.RunID != runID || d.Record.Outcome != runs.Lost || d.Record.Holder != holder {
		t.Errorf("delivered %+v, want the lost record of %s on %s as %s", d, runID, holder, id)
	}
	for _, f := range rcv.deliveries(false) {
		if f.ID != id {
			t.Errorf("a second notification %s for the lost run", f.ID)
		}
	}
}
