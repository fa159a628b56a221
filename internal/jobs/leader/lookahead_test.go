package leader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
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

// A lean job's ticks are assigned several at a time: a job ticking every
// second writes its cursor once per five ticks, not once per tick (an
// index operation and an event on every replica per run); after every
// pass every tick within the lookahead is assigned, which a leader's death
// relies on; and jobs due at the same instants are assigned in the same
// passes, so each instant's runs share an assignment (and a worker's
// claims) rather than one each.
func TestALeanJobsCursorMovesOncePerSeveralTicks(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/batch/")
	var jobs []config.Job
	for i := range 8 {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%d", i), "@every 1s"))
	}
	// Half the jobs come 2.25 s later, in a reload: they must fall in
	// with the others' passes.
	cfg, early := jobstest.Config(jobs...), jobstest.Config(jobs[:4]...)
	l := newLeanLeader(t, cli, "/batch/", early, clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	l.d.Lookahead = LookaheadFor(5 * time.Second)
	const seconds = 40
	first := map[string]int64{}
	for i := range seconds * 4 {
		if i == 9 {
			l.d.Config = func() *config.Config { return cfg }
			l.syncJobs()
		}
		mustPass(t, l)
		assigned := assignedRuns(t, cli, layout)
		horizon := clock.Now().Add(l.d.Lookahead)
		for _, j := range l.d.Config().Jobs {
			if _, ok := first[j.Name]; !ok {
				first[j.Name] = cursorVersion(t, cli, layout, j.Name)
			}
			for at := clock.Now().Truncate(time.Second).Add(time.Second); !at.After(horizon); at = at.Add(time.Second) {
				if _, ok := assigned[runs.ID(j.Name, at)]; !ok {
					t.Fatalf("at %s, %s is not assigned; every tick within the lookahead (to %s) must be",
						clock.Now().Format(time.StampMilli), runs.ID(j.Name, at), horizon.Format(time.StampMilli))
				}
			}
		}
		clock.Advance(250 * time.Millisecond)
	}
	for _, j := range cfg.Jobs {
		if writes := cursorVersion(t, cli, layout, j.Name) - first[j.Name]; writes > seconds/4 {
			t.Errorf("%s's cursor written %d times in %d ticks, want at most one per 4 ticks", j.Name, writes, seconds)
		}
	}
	perInstant := map[time.Time]int{}
	for _, key := range stored(t, cli, layout.Assignments()) {
		_, at, _, ok := layout.ParseAssignment(layout.Assignments() + key)
		if !ok {
			t.Fatalf("assignment key %q", key)
		}
		if at.After(leanStart.Add(25 * time.Second)) {
			perInstant[at]++
		}
	}
	for at, n := range perInstant {
		if n != 1 {
			t.Errorf("the 8 jobs' runs at %s are in %d assignments, want one", at.Format(time.StampMilli), n)
		}
	}
}

// Many jobs due at the same instants fill their assignments: a window
// holds as many jobs as its transaction takes cursors and assignments, so
// 300 jobs ticking every second on three workers, assigned five ticks at a
// time, come to about 33 runs an assignment (40 at most). Counted as an
// assignment per tick, a window held about 20 jobs, and an assignment 7
// runs: as many claims more for the workers.
func TestManyJobsFillTheirAssignments(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/full/")
	var jobs []config.Job
	for i := range 300 {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%03d", i), "@every 1s"))
	}
	l := newLeanLeader(t, cli, "/full/", jobstest.Config(jobs...), clock, memberKV(layout, "r1", 0x10, assign.Protocol),
		memberKV(layout, "r2", 0x20, assign.Protocol), memberKV(layout, "r3", 0x30, assign.Protocol))
	l.d.Lookahead = LookaheadFor(5 * time.Second)
	for range 12 * 4 {
		mustPass(t, l)
		clock.Advance(250 * time.Millisecond)
	}
	resp, err := cli.Get(t.Context(), layout.Assignments(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	assignments, runs := 0, 0
	for _, kv := range resp.Kvs {
		a, err := assign.Decode(layout, string(kv.Key), kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if a.At.After(leanStart.Add(10 * time.Second)) {
			assignments, runs = assignments+1, runs+len(a.Jobs)
		}
	}
	if assignments == 0 || runs < 25*assignments {
		t.Errorf("%d runs in %d assignments after the first 10 s, want 25 or more an assignment", runs, assignments)
	}
}

// A new term assigns each lean job's next batch at its first look, though
// its predecessor's cursors cover the lookahead: the handover shows at
// once (test/bench's SIGTERM step times the new leader's first tick), and
// the margin its own death would need starts from its own passes.
func TestANewTermAssignsABatchAtItsFirstLook(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/fresh/")
	cfg := jobstest.Config(jobstest.Job("a", "@every 1s"), jobstest.Job("fast", "@every 100ms"))
	members := []*mvccpb.KeyValue{memberKV(layout, "r1", 0x10, assign.Protocol)}
	term := func(name string) *leader {
		l := newLeanLeader(t, cli, "/fresh/", cfg, clock, members...)
		l.d.Lookahead = LookaheadFor(5 * time.Second)
		elect(t, l, name)
		if err := l.ticks.loadCursors(t.Context()); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := term("first")
	for range 40 { // 10 s: past the term's first lookahead
		mustPass(t, first)
		clock.Advance(250 * time.Millisecond)
	}
	mustPass(t, first)
	before := map[string]int64{}
	for _, j := range cfg.Jobs {
		before[j.Name] = cursorVersion(t, cli, layout, j.Name)
	}
	second := term("second")
	mustPass(t, second)
	for _, j := range cfg.Jobs {
		if cursorVersion(t, cli, layout, j.Name) == before[j.Name] {
			c, _ := second.cursors.get(j.Name)
			t.Errorf("the new term's first pass left %s's cursor at %s (now %s)", j.Name, c.Format(time.StampMilli), clock.Now().Format(time.StampMilli))
		}
	}
}
