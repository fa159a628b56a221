package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Records the leader writes in its fenced transactions (docs/notify.md) carry their notifications and chained runs like any other.

// setCursor stores job's cursor at at, as a leader that materialized the
// job up to at would have left it: the next leader starts from there.
func setCursor(t *testing.T, cli *clientv3.Client, job string, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, keys.New(testPrefix).Cursor(job), at.UTC().Format(runs.TimeFormat)); err != nil {
		t.Fatal(err)
	}
}

// delivered are the ids of the notifications rcv answered 2xx.
func delivered(rcv *receiver) map[string]delivery {
	out := map[string]delivery{}
	for _, d := range rcv.deliveries(true) {
		out[d.ID] = d
	}
	return out
}

// A tick whose own input renders no concurrency key is recorded skipped by
// the leader; that record notifies and queues the run chained after it.
// The chained run's key does not render either: it is recorded skipped in
// the same transaction, and notifies and chains in turn. The first ticks
// are caught up after a gap (several records in one transaction), the rest
// on time.
func TestLeaderSkippedTickNotifiesAndChains(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	keyed := httpJob("keyed", "@every 1s", w.url(""))
	keyed.ConcurrencyKey = "{{ .Input.customer_id }}"
	keyed.Input = map[string]any{"customer_id": "a/b"} // a slash: no valid key
	keyed.CatchUp = config.CatchUpAll
	down := httpJob("down", "@yearly", w.url(""))
	down.ConcurrencyKey = "{{ .Input.region }}" // keyed's input has none
	down.After = &config.After{Job: "keyed", On: []string{"skipped"}}
	last := httpJob("last", "@yearly", w.url(""))
	last.Overlap, last.QueueLimit = config.OverlapQueue, 64 // one a tick of keyed, none skipped
	last.After = &config.After{Job: "down", On: []string{"skipped"}}
	cfg := newConfig(keyed, down, last)
	// recovered: each job's health transition rides along, one a job per
	// transaction however many records it holds.
	rcv.notifies(cfg, "skipped", "recovered")
	setCursor(t, etcd.Client(), "keyed", time.Now().Add(-5*time.Second).Truncate(time.Second))
	n := etcd.node("solo", cfg)

	poll.Until(t, 60*time.Second, "8 skipped ticks, each notified and chained", func() (bool, string) {
		ks := finalRecords(t, n.client, "keyed", runs.Skipped)
		if len(ks) < 8 {
			return false, fmt.Sprintf("%d skipped records of keyed: %v", len(ks), outcomes(records(t, n.client, "keyed")))
		}
		downs, lasts, got := records(t, n.client, "down"), records(t, n.client, "last"), delivered(rcv)
		for _, k := range ks {
			if _, ok := got[notify.ID(k.RunID, 1, "skipped")]; !ok {
				return false, "no notification of keyed's " + k.RunID
			}
			d, ok := downs[runs.ChainID("down", k.RunID)]
			if !ok {
				return false, "no run of down after " + k.RunID
			}
			if _, ok := got[notify.ID(d.RunID, 1, "skipped")]; !ok {
				return false, "no notification of down's " + d.RunID
			}
			if l, ok := lasts[runs.ChainID("last", d.RunID)]; !ok || l.Outcome != runs.Succeeded {
				return false, fmt.Sprintf("run of last after %s: %q", d.RunID, l.Outcome)
			}
		}
		return true, ""
	})

	ks := records(t, n.client, "keyed")
	for _, k := range ks {
		if k.Outcome != runs.Skipped || k.Error == "" {
			t.Errorf("keyed %s: %s %q, want skipped with the key's error", k.RunID, k.Outcome, k.Error)
		}
	}
	for _, d := range records(t, n.client, "down") {
		up, ok := ks[d.UpstreamRunID]
		switch {
		case !ok:
			t.Errorf("down %s names upstream %q, which has no record", d.RunID, d.UpstreamRunID)
		case d.Outcome != runs.Skipped || d.Trigger != runs.Chain || d.RunID != runs.ChainID("down", up.RunID):
			t.Errorf("down %s: %s, trigger %s, after %s", d.RunID, d.Outcome, d.Trigger, d.UpstreamRunID)
		}
	}
	if got := len(w.finished("keyed")) + len(w.finished("down")); got != 0 {
		t.Errorf("%d requests of keyed or down, whose keys never render", got)
	}
	for id, d := range delivered(rcv) {
		if d.Event == "recovered" {
			t.Errorf("notification %s: recovered, but no job recovered", id)
		}
	}
}

// A job chained after another's missed ticks gets one run per missed tick,
// queued by the leader's fenced transaction that records the miss, and each
// miss is notified.
func TestLeaderMissedTickChainsAndNotifies(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	up := httpJob("up", "@every 1s", w.url(""))
	up.CatchUp = config.CatchUpNone
	after := httpJob("after", "@yearly", w.url(""))
	after.Overlap, after.QueueLimit = config.OverlapQueue, 64
	after.After = &config.After{Job: "up", On: []string{"missed"}}
	cfg := newConfig(up, after)
	rcv.notifies(cfg, "missed")
	// A leader gap of 6s: the next leader records the ticks of it missed.
	setCursor(t, etcd.Client(), "up", time.Now().Add(-6*time.Second).Truncate(time.Second))
	n := etcd.node("solo", cfg)

	var missed []runs.Record
	poll.Until(t, 60*time.Second, "the gap's ticks recorded missed, each chained and notified", func() (bool, string) {
		missed = finalRecords(t, n.client, "up", runs.Missed)
		if len(missed) < 4 {
			return false, fmt.Sprintf("%d missed records of up: %v", len(missed), outcomes(records(t, n.client, "up")))
		}
		as, got := records(t, n.client, "after"), delivered(rcv)
		for _, m := range missed {
			if a, ok := as[runs.ChainID("after", m.RunID)]; !ok || a.Outcome != runs.Succeeded {
				return false, fmt.Sprintf("run of after for %s: %q", m.RunID, a.Outcome)
			}
			if _, ok := got[notify.ID(m.RunID, 1, "missed")]; !ok {
				return false, "no notification of " + m.RunID
			}
		}
		return outbox(t, n.client) == 0, "notifications left in the outbox"
	})

	as := records(t, n.client, "after")
	byUp := map[string]int{}
	for _, a := range as {
		byUp[a.UpstreamRunID]++
		if a.Trigger != runs.Chain {
			t.Errorf("after %s: trigger %s, want chain", a.RunID, a.Trigger)
		}
	}
	for _, m := range missed {
		if byUp[m.RunID] != 1 {
			t.Errorf("missed %s: %d runs of after, want 1", m.RunID, byUp[m.RunID])
		}
	}
	if len(as) != len(missed) {
		t.Errorf("%d runs of after for %d missed ticks: only misses chain", len(as), len(missed))
	}
	for _, h := range w.finished("after") {
		if as[h.RunID].UpstreamRunID == "" {
			t.Errorf("request of after %s without a recorded upstream", h.RunID)
		}
	}
}
