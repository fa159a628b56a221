package jobs_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// flaky is an HTTP target that fails while failing is set.
func flaky(t *testing.T, failing *atomic.Bool) string {
	return failingTarget(t, func(*http.Request) bool { return failing.Load() })
}

// A failing job notifies each failed run, with its record, and recovered
// once: at the first success after the failures, not at the next ones.
func TestFailuresAndRecoveredAreNotified(t *testing.T) {
	etcd := startEtcd(t)
	rcv := startReceiver(t, http.StatusOK)
	var failing atomic.Bool
	failing.Store(true)
	cfg := newConfig(httpJob("flaky", "@every 1s", flaky(t, &failing)))
	rcv.notifies(cfg, "failed", "recovered")
	n := etcd.node("solo", cfg)
	poll.For(t, 30*time.Second, "three failed runs", func() bool {
		return len(finalRecords(t, n.client, "flaky", runs.Failed)) >= 3
	})
	failing.Store(false)
	poll.For(t, 30*time.Second, "three succeeded runs", func() bool {
		return len(finalRecords(t, n.client, "flaky", runs.Succeeded)) >= 3
	})
	failed := finalRecords(t, n.client, "flaky", runs.Failed)
	poll.For(t, 30*time.Second, "every notification delivered", func() bool {
		return outbox(t, n.client) == 0 && len(rcv.deliveries(true)) >= len(failed)+1
	})

	byID := map[string]delivery{}
	for _, d := range rcv.deliveries(true) {
		if _, dup := byID[d.ID]; dup {
			t.Errorf("notification %s delivered twice", d.ID)
		}
		byID[d.ID] = d
	}
	for _, r := range failed {
		d, ok := byID[notify.ID(r.RunID, r.Attempt, "failed")]
		switch {
		case !ok:
			t.Errorf("failed run %s: no notification", r.RunID)
		case d.Event != "failed" || d.Record.RunID != r.RunID || d.Record.Outcome != runs.Failed || d.Record.HTTPStatus != 500:
			t.Errorf("failed run %s notified as %+v", r.RunID, d)
		}
	}
	var recovered []delivery
	for _, d := range byID {
		if d.Event == "recovered" {
			recovered = append(recovered, d)
		}
	}
	succeeded := finalRecords(t, n.client, "flaky", runs.Succeeded)
	sort.Slice(succeeded, func(i, j int) bool { return succeeded[i].EndedAt.Before(succeeded[j].EndedAt) })
	if len(recovered) != 1 {
		t.Fatalf("%d recovered notifications after %d successes, want 1: %+v", len(recovered), len(succeeded), recovered)
	}
	if got, want := recovered[0].Record.RunID, succeeded[0].RunID; got != want {
		t.Errorf("recovered names run %s, want the first success %s", got, want)
	}
	if len(byID) != len(failed)+1 {
		t.Errorf("%d notifications for %d failed runs and one recovery", len(byID), len(failed))
	}
}

// A receiver that answers 500 for 5s gets every notification afterwards,
// each under the id it had on every try, and none twice.
func TestNotificationsAreRetriedUntilDelivered(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	job := httpJob("fails", "@yearly", w.url("status=500"))
	job.MaxConcurrency = 5
	cfg := newConfig(job)
	cfg.Notify.Sinks = []config.Sink{rcv.sink("ops", "failed")}
	cfg.Jobs[0].Notify = []string{"ops"}
	n := etcd.leading("solo", cfg)
	rcv.refuseFor(5 * time.Second)
	for range 5 {
		n.trigger(t, "fails", "")
	}
	// Every run ends. On a starved machine one may end lost (its 2s session
	// expired) or missed rather than failed; only failed runs notify here.
	poll.Until(t, 60*time.Second, "five runs ended", func() (bool, string) {
		rs := records(t, n.client, "fails")
		return len(rs) == 5, fmt.Sprint(outcomes(rs))
	})
	failed := finalRecords(t, n.client, "fails", runs.Failed)
	if len(failed) == 0 {
		t.Fatalf("no run failed: %v", outcomes(records(t, n.client, "fails")))
	}
	poll.Until(t, 60*time.Second, "every notification delivered", func() (bool, string) {
		left, got := outbox(t, n.client), len(rcv.deliveries(true))
		return left == 0 && got >= len(failed), fmt.Sprintf("%d in the outbox, %d of %d delivered", left, got, len(failed))
	})

	refused := map[string]int{}
	for _, d := range rcv.deliveries(false) {
		refused[d.ID]++
	}
	ids := map[string]string{} // run id -> notification id
	for _, d := range rcv.deliveries(true) {
		if prev, ok := ids[d.Record.RunID]; ok {
			t.Errorf("run %s delivered twice: ids %s and %s", d.Record.RunID, prev, d.ID)
		}
		ids[d.Record.RunID] = d.ID
		if refused[d.ID] == 0 {
			t.Errorf("notification %s delivered without an earlier refused try under the same id", d.ID)
		}
	}
	for _, r := range failed {
		if ids[r.RunID] != notify.ID(r.RunID, r.Attempt, "failed") {
			t.Errorf("failed run %s: delivered as %q", r.RunID, ids[r.RunID])
		}
	}
	for _, d := range rcv.deliveries(false) {
		if _, ok := ids[d.Record.RunID]; !ok || ids[d.Record.RunID] != d.ID {
			t.Errorf("refused try %s names run %s, delivered as %q", d.ID, d.Record.RunID, ids[d.Record.RunID])
		}
	}
	t.Logf("%d notifications, %d refused tries before delivery", len(ids), len(rcv.deliveries(false)))
}

// A sink that never answers holds its own delivery slots only: another
// sink gets every notification meanwhile.
func TestHangingSinkDoesNotStallOthers(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	rcv := startReceiver(t, http.StatusOK)
	job := httpJob("fails", "@yearly", w.url("status=500"))
	job.MaxConcurrency = 8
	cfg := newConfig(job)
	cfg.Notify.Sinks = []config.Sink{
		{Name: "hangs", URL: hang.URL, Format: config.FormatJSON, On: []string{"failed"}},
		rcv.sink("ops", "failed"),
	}
	cfg.Notify.Default = []string{"hangs", "ops"}
	n := etcd.leading("solo", cfg)
	for range 8 {
		n.trigger(t, "fails", "")
	}
	poll.For(t, 30*time.Second, "eight notifications at the answering sink", func() bool {
		return len(rcv.deliveries(true)) == 8
	})
	// The answering sink's keys are deleted after its 2xx; the hanging
	// sink's 8 stay.
	poll.For(t, 10*time.Second, "only the hanging sink's notifications waiting", func() bool {
		return outbox(t, n.client) == 8
	})
}
