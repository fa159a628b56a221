package jobs_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
)

// storedSuccess is the last success stored at key; nil when there is none.
func storedSuccess(t *testing.T, cli *clientv3.Client, key string) *overdue.Succeeded {
	t.Helper()
	resp, err := cli.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	var s overdue.Succeeded
	if err := json.Unmarshal(resp.Kvs[0].Value, &s); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return &s
}

// shownSuccess waits until n's API and gauge both show want (asked anew
// each time: report keeps succeeding) as report's last success.
func shownSuccess(t *testing.T, n *node, reg *prometheus.Registry, wantNow func() *overdue.Succeeded) {
	t.Helper()
	poll.Until(t, 30*time.Second, "the API and the gauge to show the last success", func() (bool, string) {
		want := wantNow()
		if want == nil {
			return false, "none stored"
		}
		st, err := n.engine.Job(t.Context(), "report")
		if err != nil {
			return false, err.Error()
		}
		gauge := metric(t, reg, "scheduler_job_last_success_timestamp_seconds", map[string]string{"job": "report", "team": ""})
		wantGauge := float64(want.EndedAt.UnixMilli()) / 1000
		return st.LastSucceededAt.Equal(want.EndedAt) && gauge == wantGauge,
			fmt.Sprintf("API %s, gauge %.3f; want %s", st.LastSucceededAt, gauge, want.EndedAt)
	})
}

// A run's success is put where no replica watches (succeeded/<job>): no
// replica decodes an event for it, and the API and the gauge read it when
// asked, on every replica.
func TestALastSuccessIsReadWhenAskedNotWatched(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("report", "@every 1s", w.url("")))
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := etcd.nodeWith("a", cfg, timing{Reg: regA, CountEvents: true})
	b := etcd.nodeWith("b", cfg, timing{Reg: regB, CountEvents: true})
	layout := keys.New(testPrefix)
	type replica struct {
		node *node
		reg  *prometheus.Registry
	}
	replicas := []replica{{a, regA}, {b, regB}}
	successEvents := func(reg *prometheus.Registry) float64 {
		return metric(t, reg, "scheduler_watch_events_total", map[string]string{"kind": "succeeded"}) +
			metric(t, reg, "scheduler_watch_events_total", map[string]string{"kind": "jobs/succeeded"})
	}
	// From once both replicas run (a replica that does not know its
	// peers yet puts a success where an older one would read it).
	var first *overdue.Succeeded
	poll.Until(t, 60*time.Second, "a success put under succeeded/", func() (bool, string) {
		first = storedSuccess(t, a.client, layout.LastSuccess("report"))
		return first != nil, "none yet"
	})
	before := []float64{successEvents(regA), successEvents(regB)}
	old := storedSuccess(t, a.client, layout.SucceededInJobs("report"))
	finished := len(w.finished("report"))
	poll.Until(t, 60*time.Second, "three more succeeded runs of report", func() (bool, string) {
		last := storedSuccess(t, a.client, layout.LastSuccess("report"))
		n := len(w.finished("report"))
		return n >= finished+3 && last.RunID != first.RunID, fmt.Sprint(n-finished, " more finished")
	})
	if now := storedSuccess(t, a.client, layout.SucceededInJobs("report")); fmt.Sprint(now) != fmt.Sprint(old) {
		t.Errorf("a success was put under jobs/, which every replica watches: %+v, before %+v", now, old)
	}
	for i, r := range replicas {
		if got := successEvents(r.reg); got != before[i] {
			t.Errorf("replica %s decoded %v events of last successes during the runs", r.node.id, got-before[i])
		}
		shownSuccess(t, r.node, r.reg, func() *overdue.Succeeded { return storedSuccess(t, a.client, layout.LastSuccess("report")) })
	}
	// The counting itself works: the replica decoded events of other
	// kinds (its assignments, claim markers, cursors; the job slots only
	// while its queue path runs, which a lean job may never need).
	others := 0.0
	for _, kind := range keys.Kinds() {
		if kind != "succeeded" && kind != "jobs/succeeded" {
			others += metric(t, regA, "scheduler_watch_events_total", map[string]string{"kind": kind})
		}
	}
	if others == 0 {
		t.Error("the replica counted no watch events at all: the check above cannot fail")
	}
}

// A rolling upgrade: while a member advertises a protocol before
// assign.SuccessApart, a success is put where that member reads it
// (jobs/<job>/succeeded); once it is gone, under succeeded/. A replica
// shows the later of the two, whichever an old or a new replica wrote.
func TestALastSuccessGoesWhereAnOlderMemberReadsIt(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("report", "@every 1s", w.url("")))
	layout := keys.New(testPrefix)
	reg := prometheus.NewRegistry()
	a := etcd.nodeWith("a", cfg, timing{Reg: reg})
	lease, err := a.client.Grant(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	// The member key a replica of the commit before writes: protocol 2.
	if _, err := a.client.Put(t.Context(), layout.Member("old"), `{"id":"old","protocol":2}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	var old *overdue.Succeeded
	poll.Until(t, 60*time.Second, "a success put under jobs/ for the old member", func() (bool, string) {
		old = storedSuccess(t, a.client, layout.SucceededInJobs("report"))
		return old != nil, "none yet"
	})
	shownSuccess(t, a, reg, func() *overdue.Succeeded { return storedSuccess(t, a.client, layout.SucceededInJobs("report")) })

	if _, err := a.client.Revoke(t.Context(), lease.ID); err != nil {
		t.Fatal(err)
	}
	var apart *overdue.Succeeded
	poll.Until(t, 60*time.Second, "a success put under succeeded/ once the old member left", func() (bool, string) {
		apart = storedSuccess(t, a.client, layout.LastSuccess("report"))
		return apart != nil && apart.ScheduledAt.After(old.ScheduledAt), fmt.Sprintf("%+v", apart)
	})
	shownSuccess(t, a, reg, func() *overdue.Succeeded { return storedSuccess(t, a.client, layout.LastSuccess("report")) })

	// An old replica still running a tick ends it after the new ones: its
	// success, under jobs/, is the later and is shown.
	late := overdue.Succeeded{RunID: "report-late", ScheduledAt: time.Now().Add(time.Hour).UTC(), EndedAt: time.Now().Add(time.Hour).UTC()}
	if _, err := a.client.Put(t.Context(), layout.SucceededInJobs("report"), overdue.Encode(late)); err != nil {
		t.Fatal(err)
	}
	shownSuccess(t, a, reg, func() *overdue.Succeeded { return &late })
}

// A job succeeding every second has its last success put about once in
// ten runs, not once a run (the worker's successes.go): the first success
// by its run's release, the newest of the runs after it when ten seconds
// are over; a graceful stop puts the one still waiting, so the stored
// success is the newest run's. A job with overdue_after, whose alert
// reads it, has every success put.
func TestALastSuccessIsPutOnceInTenSecondsNotOnceARun(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	watched := httpJob("watched", "@every 1s", w.url(""))
	watched.OverdueAfter = config.Duration(time.Hour)
	a := etcd.node("a", newConfig(httpJob("report", "@every 1s", w.url("")), watched))
	key := keys.New(testPrefix).LastSuccess("report")
	watch := a.client.Watch(t.Context(), key)
	var puts int
	poll.Until(t, 90*time.Second, "25 succeeded runs of report", func() (bool, string) {
		for {
			select {
			case resp := <-watch:
				puts += len(resp.Events)
				continue
			default:
			}
			break
		}
		n := len(w.finished("report"))
		return n >= 25, fmt.Sprint(n, " runs, ", puts, " puts")
	})
	a.stop(10 * time.Second)
	ran := w.finished("report")
	last := storedSuccess(t, etcd.Client(), key)
	if newest := ran[len(ran)-1].RunID; last == nil || last.RunID != newest {
		t.Errorf("stored last success %+v after a graceful stop, want the newest run's, %s", last, newest)
	}
	t.Logf("%d runs, their last success put %d times", len(ran), puts)
	if puts == 0 || puts > len(ran)/5 {
		t.Errorf("%d runs put their last success %d times, want about one in ten", len(ran), puts)
	}
	every := w.finished("watched")
	resp, err := etcd.Client().Get(t.Context(), keys.New(testPrefix).LastSuccess("watched"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version < int64(len(every)-1) {
		t.Errorf("a job with overdue_after: %d runs, its last success %v, want put by each run's release", len(every), resp.Kvs)
	}
}
