package jobs_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
)

// scheduler_job_paused{job} is 1 while the job is paused and 0 otherwise,
// on every replica; a pause's reason and until are in the job's status on
// every replica, and a resume clears them.
func TestPausedGaugeAndPauseDetails(t *testing.T) {
	etcd := startEtcd(t)
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	far := jobstest.FarTick(time.Now()) // once: both replicas' configs alike
	cfg := func() *config.Config {
		return newConfig(idleJob("a", far), idleJob("b", far))
	}
	a := etcd.nodeWith("a", cfg(), timing{Reg: regA})
	b := etcd.nodeWith("b", cfg(), timing{Reg: regB})
	leaderOf(t, []*node{a, b})
	ctx := t.Context()
	paused := func(reg *prometheus.Registry, job string) float64 {
		return metric(t, reg, "scheduler_job_paused", map[string]string{"job": job})
	}

	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, err := a.engine.Pause(ctx, "a", jobs.PauseRequest{Reason: "vendor outage", Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Paused || st.PauseReason != "vendor outage" || !st.PausedUntil.Equal(until) || st.PausedAt.IsZero() {
		t.Errorf("pause answered paused %v, reason %q, at %s, until %s", st.Paused, st.PauseReason, st.PausedAt, st.PausedUntil)
	}
	if v := paused(regA, "a"); v != 1 {
		t.Errorf("gauge of a on the replica that paused it: %v, want 1", v)
	}
	poll.For(t, 10*time.Second, "b to see the pause", func() bool { return paused(regB, "a") == 1 })
	if stb, err := b.engine.Job(ctx, "a"); err != nil || stb.PauseReason != "vendor outage" || !stb.PausedUntil.Equal(until) {
		t.Errorf("b's status of a: %+v, %v", stb, err)
	}
	if v := paused(regA, "b"); v != 0 {
		t.Errorf("gauge of b, not paused: %v, want 0", v)
	}

	st, err = a.engine.Resume(ctx, "a")
	if err != nil || st.Paused || st.PauseReason != "" || !st.PausedUntil.IsZero() {
		t.Errorf("resume answered paused %v, reason %q, until %s, %v", st.Paused, st.PauseReason, st.PausedUntil, err)
	}
	if v := paused(regA, "a"); v != 0 {
		t.Errorf("gauge of a after the resume: %v, want 0", v)
	}
	if _, err := a.engine.Pause(ctx, "a", jobs.PauseRequest{Until: time.Now().Add(-time.Minute)}); err == nil {
		t.Error("a pause until a past time was taken")
	}
}

// A pause with an until ends by itself on a running cluster: the job runs
// again after until and its pause marker is gone (the leader's term part
// that ends pauses is wired; TestPauseEndsAtItsUntil in package leader
// tests it on a fake clock).
func TestPauseUntilEndsOnARunningCluster(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	n := etcd.leading("a", newConfig(httpJob("tick", "@every 1s", w.url(""))))
	ctx := t.Context()
	until := time.Now().Add(2 * time.Second)
	if _, err := n.engine.Pause(ctx, "tick", jobs.PauseRequest{Reason: "short", Until: until}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the pause marker gone after until", func() bool {
		resp, err := n.client.Get(ctx, keys.New(testPrefix).Paused("tick"), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	})
	if now := time.Now(); now.Before(until) {
		t.Errorf("the marker went at %s, before until %s", now, until)
	}
	st, err := n.engine.Job(ctx, "tick")
	if err != nil || st.Paused || st.PauseReason != "" {
		t.Errorf("after until: paused %v, reason %q, %v; want active", st.Paused, st.PauseReason, err)
	}
	poll.For(t, 30*time.Second, "a run after until", func() bool {
		for _, h := range w.finished("tick") {
			if h.Start.After(until) {
				return true
			}
		}
		return false
	})
}
