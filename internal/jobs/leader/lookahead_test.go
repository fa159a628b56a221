package leader

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// A job's lookahead is the far one, cut at its maxAhead-th next tick, but
// never shorter than the near one: a fast job cannot queue without bound.
func TestReachBoundsFastJobs(t *testing.T) {
	now := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	every := func(d time.Duration) schedule.Schedule { return schedule.Every{Interval: d} }
	hourly, err := schedule.Parse("0 * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		sched      schedule.Schedule
		near, far  time.Duration
		want       time.Duration
		wantAtMost int // ticks in (now, now+want]
	}{
		{"@every 100ms, session_ttl 5s", every(100 * time.Millisecond), 2 * time.Second, 7 * time.Second, 7 * time.Second, 70},
		{"@every 100ms, session_ttl 58s", every(100 * time.Millisecond), 2 * time.Second, 60 * time.Second, 10 * time.Second, maxAhead},
		{"@every 1s, session_ttl 58s", every(time.Second), 2 * time.Second, 60 * time.Second, 60 * time.Second, 60},
		{"@every 10ms: never less than near", every(10 * time.Millisecond), 2 * time.Second, 60 * time.Second, 2 * time.Second, 200},
		{"far below near", every(100 * time.Millisecond), 2 * time.Second, time.Second, time.Second, 10},
		{"hourly", hourly, 2 * time.Second, 7 * time.Second, 7 * time.Second, 0},
	} {
		got := reach(c.sched, now, c.near, c.far)
		if got != c.want {
			t.Errorf("%s: reach %s, want %s", c.name, got, c.want)
		}
		n := 0
		for tick := c.sched.Next(now); !tick.IsZero() && !tick.After(now.Add(got)); tick = c.sched.Next(tick) {
			n++
		}
		if n > c.wantAtMost {
			t.Errorf("%s: %d ticks within the reach, want at most %d", c.name, n, c.wantAtMost)
		}
	}
}

// queued returns the pending entries under the leader's prefix, by run id.
func queued(t *testing.T, l *leader) map[string]*queue.Entry {
	t.Helper()
	resp, err := l.d.Client.Get(t.Context(), l.d.Keys.Queue(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*queue.Entry{}
	specs := queue.NewSpecs(l.d.Keys, l.d.Client, nil)
	for _, kv := range resp.Kvs {
		e, err := queue.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		// Entries name their spec: resolve it, as every reader does.
		it, err := specs.Resolve(t.Context(), &queue.Item{Entry: e, Key: string(kv.Key), ModRev: kv.ModRevision})
		if err != nil {
			t.Fatal(err)
		}
		out[e.RunID] = it.Entry
	}
	return out
}

// A leader with a long lookahead writes a fast job's ticks up to its
// per-job bound, then one tick per pass, each as its oldest comes due; a
// full queue brings every job back to the near lookahead.
func TestLookaheadBoundsTheTicksOfAJob(t *testing.T) {
	ctx := t.Context()
	fast := jobstest.Job("fast", "@every 100ms")
	other := jobstest.Job("other", "@every 100ms")
	cfg := jobstest.Config(fast, other)
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	l, cli, clock := leaderOn(t, "/bound/", cfg, start)
	startTerm(t, l, time.Minute)

	// The first pass writes what is due within NearLookahead and
	// maxFarPerPass ticks beyond, and looks again a tick later.
	wake, err := l.process(ctx, &cfg.Jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	near := int(NearLookahead / (100 * time.Millisecond))
	if got := len(queued(t, l)); got != near+maxFarPerPass {
		t.Fatalf("first pass queued %d ticks, want %d (near) + %d", got, near, maxFarPerPass)
	}
	if want := start.Add(100 * time.Millisecond); !wake.Equal(want) {
		t.Errorf("next look at %s, want %s", wake.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
	// Pass after pass, a tick apart, it fills up to its bound: maxAhead
	// ticks after now, and from then on one a pass.
	for range 20 {
		clock.Advance(wake.Sub(clock.Now()))
		if wake, err = l.process(ctx, &cfg.Jobs[0]); err != nil {
			t.Fatal(err)
		}
	}
	ahead := 0
	for _, e := range queued(t, l) {
		if e.ScheduledAt.After(clock.Now()) {
			ahead++
		}
	}
	if ahead != maxAhead {
		t.Errorf("a job @every 100ms with a minute's lookahead has %d ticks queued ahead, want %d", ahead, maxAhead)
	}
	if want := clock.Now().Add(100 * time.Millisecond); !wake.Equal(want) {
		t.Errorf("next look at %s, want %s: when the oldest tick comes due", wake.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}

	// The queue holds as many entries as the overall bound: the next job
	// is planned NearLookahead ahead only.
	view := queue.NewView(l.d.Keys, nil, queue.NewSpecs(l.d.Keys, cli, nil))
	resp, err := cli.Get(ctx, l.d.Keys.Queue(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	view.Reset(resp.Kvs, resp.Header.Revision)
	l.d.Queue, l.maxQueued = view, len(resp.Kvs)
	if _, err := l.process(ctx, &cfg.Jobs[1]); err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, e := range queued(t, l) {
		if e.Job == "other" && e.ScheduledAt.After(last) {
			last = e.ScheduledAt
		}
	}
	if want := clock.Now().Add(NearLookahead); !last.Equal(want) {
		t.Errorf("with the queue full, a job @every 100ms is queued up to %s, want %s (NearLookahead)", last.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

// setPaused sets the pause view as the mirror of jobs/ would.
func setPaused(l *leader, job string, paused bool) {
	var kvs []*mvccpb.KeyValue
	if paused {
		kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(l.d.Keys.Paused(job)), Value: []byte("true")})
	}
	l.d.Paused.Reset(kvs, 0)
}

// Ticks materialized ahead follow the job: a changed job's not yet due are
// written again with the new spec, a paused job's are withdrawn and its
// cursor goes back to now (a resume plans from then), a removed job's are
// withdrawn. A claimed run, a manual run and a tick due within the guard
// stay; no tick is written twice.
func TestMaterializedTicksFollowChangePauseAndRemoval(t *testing.T) {
	ctx := t.Context()
	job := jobstest.HTTPJob("a", "@every 1s", "http://127.0.0.1:1/old")
	cfg := jobstest.Config(job)
	start := time.Date(2026, 11, 21, 21, 0, 0, 900_000_000, time.UTC) // a tick due within the guard
	l, cli, clock := leaderOn(t, "/follow/", cfg, start)
	startTerm(t, l, 10*time.Second)
	if _, err := l.process(ctx, &cfg.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	base := start.Truncate(time.Second)
	tick := func(i int) string { return runs.ID("a", base.Add(time.Duration(i)*time.Second)) }
	if got := len(queued(t, l)); got != 10 {
		t.Fatalf("%d ticks queued, want 10", got)
	}
	// Tick 5 is claimed (as a worker's claim rewrites it), and a manual
	// run waits: neither is the leader's to withdraw.
	claimed := queued(t, l)[tick(5)]
	claimed.State, claimed.Holder = queue.Running, "w1"
	if _, err := cli.Put(ctx, l.d.Keys.Entry("a", tick(5)), claimed.Encode()); err != nil {
		t.Fatal(err)
	}
	manual := queue.NewEntry(runs.ManualID("a", "01"), &cfg.Jobs[0], nil, start, start.Add(3*time.Second), 1, runs.Manual)
	if _, err := cli.Put(ctx, l.d.Keys.Entry("a", manual.RunID), manual.Encode()); err != nil {
		t.Fatal(err)
	}
	spec := func(id string) string {
		e := queued(t, l)[id]
		if e == nil {
			return "none"
		}
		return e.Spec.HTTP.URL
	}
	pass := func() {
		t.Helper()
		if err := l.pass(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Changed: the ticks beyond the guard are the new spec's.
	changed := jobstest.Config(jobstest.HTTPJob("a", "@every 1s", "http://127.0.0.1:1/new"))
	l.d.Config = func() *config.Config { return changed }
	l.syncJobs()
	pass()
	if got := spec(tick(1)); got != "http://127.0.0.1:1/old" {
		t.Errorf("the tick due within the guard: %s, want the old spec kept", got)
	}
	for i := 2; i <= 10; i++ {
		want := "http://127.0.0.1:1/new"
		if i == 5 {
			want = "http://127.0.0.1:1/old" // claimed: runs as claimed
		}
		if got := spec(tick(i)); got != want {
			t.Errorf("tick %d after the change: %s, want %s", i, got, want)
		}
	}
	if q := queued(t, l); len(q) != 11 || q[manual.RunID] == nil {
		t.Errorf("after the change %d entries (manual run kept: %v), want 11", len(q), q[manual.RunID] != nil)
	}

	// Paused: every pending tick goes; the claimed and the manual run stay.
	setPaused(l, "a", true)
	l.syncPaused()
	pass()
	if q := queued(t, l); len(q) != 2 || q[tick(5)] == nil || q[manual.RunID] == nil {
		t.Errorf("paused: %d entries left, want the claimed tick and the manual run", len(q))
	}
	if c, _ := l.cursors.get("a"); c.After(clock.Now()) {
		t.Errorf("paused: cursor %s ahead of now %s", c, clock.Now())
	}
	clock.Advance(3 * time.Second)
	pass()
	if q := queued(t, l); len(q) != 2 {
		t.Errorf("paused 3s: %d entries, want 2", len(q))
	}

	// Resumed: planned again from now, at once, not caught up.
	setPaused(l, "a", false)
	l.syncPaused()
	pass()
	q := queued(t, l)
	for i := 1; i <= 3; i++ {
		if i != 5 && q[tick(i)] != nil {
			t.Errorf("resumed: tick %d of the pause queued", i)
		}
	}
	for i := 4; i <= 13; i++ {
		if q[tick(i)] == nil {
			t.Errorf("resumed: tick %d not queued", i)
		}
	}

	// Removed: its pending ticks go, the claimed and the manual run stay.
	l.d.Config = func() *config.Config { return jobstest.Config() }
	l.syncJobs()
	pass()
	if q := queued(t, l); len(q) != 2 || q[tick(5)] == nil || q[manual.RunID] == nil {
		t.Errorf("removed: %d entries left, want the claimed tick and the manual run", len(q))
	}
	if _, ok := l.gone["a"]; ok {
		t.Error("removed: the withdrawal is still to do")
	}

	// Back again: planned from its cursor; the ticks withdrawn come once.
	l.d.Config = func() *config.Config { return changed }
	l.syncJobs()
	pass()
	seen := map[string]bool{}
	for id, e := range queued(t, l) {
		if seen[id] {
			t.Errorf("%s queued twice", id)
		}
		seen[id] = true
		_ = e
	}
	if len(seen) < 10 {
		t.Errorf("back again: %d entries, want its lookahead's ticks", len(seen))
	}
}

// A claim that lands between the withdrawal's read and its transaction
// keeps its run: the transaction compares each entry as read.
func TestWithdrawSparesAClaimMadeMeanwhile(t *testing.T) {
	ctx := t.Context()
	cfg := jobstest.Config(jobstest.Job("a", "@every 1s"))
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	l, cli, _ := leaderOn(t, "/spare/", cfg, start)
	startTerm(t, l, 5*time.Second)
	if _, err := l.process(ctx, &cfg.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	id := runs.ID("a", start.Add(3*time.Second))
	key := l.d.Keys.Entry("a", id)
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("entry %s: %v", id, err)
	}
	todo := []withdrawn{{key: key, at: start.Add(3 * time.Second), modRev: resp.Kvs[0].ModRevision}}
	e := queued(t, l)[id]
	e.State = queue.Running
	if _, err := cli.Put(ctx, key, e.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := l.withdrawer.chunk(context.Background(), "a", todo, start); err != errCursorMoved {
		t.Fatalf("withdrawing a claimed entry: %v, want errCursorMoved (read again)", err)
	}
	if queued(t, l)[id] == nil {
		t.Fatal("the claimed run was withdrawn")
	}
	// Read again, the withdrawal leaves it and takes the rest.
	if _, err := l.withdrawer.withdraw(ctx, "a", time.Time{}, start); err != nil {
		t.Fatal(err)
	}
	if q := queued(t, l); len(q) != 1 || q[id] == nil {
		t.Errorf("%d entries left, want only the claimed run", len(q))
	}
}
