package leader

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
)

// A paused job's ticks are not counted as skips, neither those withdrawn
// at the pause nor the ones that pass while it lasts: two minutes of a
// paused @every 1s job used to count 112 reason="paused" skips (docs/design-leader.md#a-pause-ends-at-its-until; the gauge scheduler_job_paused says it is paused). The
// cursor still follows the clock.
func TestPausedTicksAreNotCountedAsSkips(t *testing.T) {
	ctx := t.Context()
	cfg := jobstest.Config(jobstest.Job("a", "@every 1s"))
	l, _, clock := leaderOn(t, "/quiet/", cfg, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	startTerm(t, l, 10*time.Second)
	if _, err := l.process(ctx, &cfg.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, l)); n != 10 {
		t.Fatalf("%d ticks queued ahead, want 10", n)
	}
	setPaused(l, "a", true)
	l.syncPaused()
	for range 120 {
		if err := l.pass(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if err := l.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(queued(t, l)); n != 0 {
		t.Errorf("paused: %d entries queued, want none", n)
	}
	if c, _ := l.cursors.get("a"); clock.Now().Sub(c) > 2*time.Second {
		t.Errorf("paused two minutes: cursor %s, want it following the clock (%s)", c, clock.Now())
	}
	if n := testutil.ToFloat64(l.d.Metrics.Skipped.WithLabelValues("a", "paused")); n != 0 {
		t.Errorf("%v paused ticks counted as skips, want none", n)
	}
}

// A pause with an until ends by itself: the view counts the job resumed
// as soon as the clock passes until, and the leader then ends the pause
// in etcd (the marker deleted, or "false" where the file says paused).
// A pause without until, and one written again after the leader read it,
// stay.
func TestPauseEndsAtItsUntil(t *testing.T) {
	ctx := t.Context()
	fileJob := jobstest.Job("file", "@every 1s")
	fileJob.Paused = true
	cfg := jobstest.Config(jobstest.Job("a", "@every 1s"), fileJob,
		jobstest.Job("again", "@every 1s"), jobstest.Job("forever", "@every 1s"))
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	l, cli, clock := leaderOn(t, "/until/", cfg, now)
	until := now.Add(time.Minute)
	freeze := pause.Encode(pause.Marker{Reason: "freeze", At: now, Until: until})
	for _, job := range []string{"a", "file", "again"} {
		if _, err := cli.Put(ctx, l.d.Keys.Paused(job), freeze); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, l.d.Keys.Paused("forever"), pause.Encode(pause.Marker{Reason: "retired"})); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, l.d.Keys.Jobs(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	l.d.Paused.Reset(resp.Kvs, resp.Header.Revision)
	if st := l.d.Paused.State("a", false); !st.Paused || st.Reason != "freeze" || !st.Until.Equal(until) {
		t.Fatalf("before until: %+v, want paused for freeze until %s", st, until)
	}
	next, err := (&resumer{base: l.base}).round(ctx)
	if err != nil || !next.Equal(until) {
		t.Fatalf("before until: next %s, %v; want %s", next, err, until)
	}
	// Paused again (a new reason) after the view was read: not the pause
	// the leader saw end.
	if _, err := cli.Put(ctx, l.d.Keys.Paused("again"), pause.Encode(pause.Marker{Reason: "longer", At: now, Until: until.Add(time.Hour)})); err != nil {
		t.Fatal(err)
	}

	clock.Advance(time.Minute)
	if l.d.Paused.Is("a", false) || l.d.Paused.Is("file", true) {
		t.Error("at until, before the leader's write: still paused; want resumed everywhere at once")
	}
	if !l.d.Paused.Is("forever", false) {
		t.Error("a pause without until ended")
	}
	if _, err := (&resumer{base: l.base}).round(ctx); err != nil {
		t.Fatal(err)
	}
	value := func(job string) string {
		resp, err := cli.Get(ctx, l.d.Keys.Paused(job))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "(none)"
		}
		return string(resp.Kvs[0].Value)
	}
	if v := value("a"); v != "(none)" {
		t.Errorf("a after until: marker %s, want it deleted", v)
	}
	if v := value("file"); v != pause.Resumed {
		t.Errorf("file (paused in the file) after until: marker %s, want %q", v, pause.Resumed)
	}
	if p := pause.Decode([]byte(value("again"))); p.Reason != "longer" {
		t.Errorf("again, paused anew after the read: %+v, want the new pause kept", p)
	}
	if p := pause.Decode([]byte(value("forever"))); !p.Paused || p.Reason != "retired" {
		t.Errorf("forever: %+v, want its pause kept", p)
	}
}
