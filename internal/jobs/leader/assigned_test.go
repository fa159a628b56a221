package leader

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// leanStart is the instant the lean tests' clocks start at.
var leanStart = time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC)

// leanEtcd is a test's etcd client, its clock at leanStart and its
// prefix's layout.
func leanEtcd(t *testing.T, prefix string) (*clientv3.Client, *clockwork.FakeClock, keys.Layout) {
	t.Helper()
	return etcdtest.Start(t).Client(), clockwork.NewFakeClockAt(leanStart), keys.New(prefix)
}

// passes runs n passes of l, the clock a second on after each.
func passes(t *testing.T, l *leader, clock *clockwork.FakeClock, n int) {
	t.Helper()
	for range n {
		mustPass(t, l)
		clock.Advance(time.Second)
	}
}

// mustPass runs one pass of l; an error fails the test.
func mustPass(t *testing.T, l *leader) {
	t.Helper()
	if err := l.pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// memberKV is replica id's member key on lease as the mirror hands it
// over; protocol 0 writes none, as replicas of older commits do.
func memberKV(layout keys.Layout, id string, lease int64, protocol int) *mvccpb.KeyValue {
	v := fmt.Sprintf(`{"id":%q}`, id)
	if protocol > 0 {
		v = fmt.Sprintf(`{"id":%q,"protocol":%d}`, id, protocol)
	}
	return &mvccpb.KeyValue{Key: []byte(layout.Member(id)), Value: []byte(v), Lease: lease}
}

// leanJobs are an eligible job and one whose resource has a limit.
func leanJobs() *config.Config {
	cfg := jobstest.Config(
		jobstest.Job("fast", "@every 1s"),
		jobstest.Job("limited", "@every 1s"),
	)
	cfg.Jobs[1].Resources = []string{"shared"} // jobstest's, limit 2
	return cfg
}

// newLeanLeader is a test leader whose members' view lists members.
func newLeanLeader(t *testing.T, cli *clientv3.Client, prefix string, cfg *config.Config, clock clockwork.Clock, members ...*mvccpb.KeyValue) *leader {
	t.Helper()
	l := newTestLeader(t, cli, prefix, cfg, clock)
	l.d.Workers = NewWorkers(l.d.Keys)
	l.d.Workers.Reset(members, 1)
	if err := l.ticks.initCursors(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.jobs = nil // the term's first look: every job is planned at once
	l.syncJobs()
	return l
}

// stored lists the keys under one of the layout's directories.
func stored(t *testing.T, cli *clientv3.Client, dir string) []string {
	t.Helper()
	resp, err := cli.Get(t.Context(), dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, strings.TrimPrefix(string(kv.Key), dir))
	}
	return out
}

// assignedRuns are the run ids the stored assignments name, by worker.
func assignedRuns(t *testing.T, cli *clientv3.Client, layout keys.Layout) map[string]string {
	t.Helper()
	resp, err := cli.Get(t.Context(), layout.Assignments(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		a, err := assign.Decode(layout, string(kv.Key), kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range a.Jobs {
			if w, dup := out[a.RunID(j.Name)]; dup {
				t.Errorf("run %s assigned twice: to %s and %s", a.RunID(j.Name), w, a.Worker)
			}
			out[a.RunID(j.Name)] = a.Worker
		}
	}
	return out
}

func cursorVersion(t *testing.T, cli *clientv3.Client, layout keys.Layout, job string) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), layout.Cursor(job))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("cursor of %s: %v, %d keys", job, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Version
}

// With every member on the lean protocol, a pass assigns the ticks of a job
// that needs no waiting, once its spec is written in the term, and keeps
// queue entries for a job whose resource has a limit; each job's cursor
// moves once a pass, and a pass with nothing new writes nothing.
func TestLeanClusterAssignsEligibleTicksAndQueuesTheRest(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/lean/")
	l := newLeanLeader(t, cli, "/lean/", leanJobs(), clock,
		memberKV(layout, "r1", 0x10, assign.Protocol), memberKV(layout, "r2", 0x20, assign.Protocol))

	mustPass(t, l)
	// The first pass of the term assigns too, writing the job's spec with
	// its cursor: a term's first ticks do not flood the queue path.
	first := runs.ID("fast", leanStart.Add(time.Second))
	if _, ok := assignedRuns(t, cli, layout)[first]; !ok {
		t.Fatalf("first pass of the term did not assign %s; assignments %v", first, stored(t, cli, layout.Assignments()))
	}
	if got := stored(t, cli, layout.Specs()); len(got) < 2 {
		t.Fatalf("specs after the first pass: %v; want fast's (with its assignment) and limited's (with its entry)", got)
	}
	before := map[string]int64{"fast": cursorVersion(t, cli, layout, "fast"), "limited": cursorVersion(t, cli, layout, "limited")}

	clock.Advance(time.Second)
	mustPass(t, l)
	due := leanStart.Add(3 * time.Second) // the tick the second pass reaches (lookahead 2s)
	assigned := assignedRuns(t, cli, layout)
	fast, limited := runs.ID("fast", due), runs.ID("limited", due)
	if w := assigned[fast]; w != keys.Incarnation("r1", 0x10) && w != keys.Incarnation("r2", 0x20) {
		t.Errorf("%s assigned to %q, want a live incarnation; assignments %v", fast, w, assigned)
	}
	if _, ok := assigned[limited]; ok {
		t.Errorf("%s assigned; a job whose resource has a limit must keep the queue path", limited)
	}
	entries := stored(t, cli, layout.Queue())
	has := func(job, runID string) bool {
		for _, k := range entries {
			if k == job+"/"+runID {
				return true
			}
		}
		return false
	}
	if has("fast", fast) {
		t.Errorf("%s has a queue entry besides its assignment", fast)
	}
	if !has("limited", limited) {
		t.Errorf("%s has no queue entry; entries %v", limited, entries)
	}
	for job, v := range before {
		if got := cursorVersion(t, cli, layout, job); got != v+1 {
			t.Errorf("cursor of %s written %d times by one pass, want once", job, got-v)
		}
	}

	mustPass(t, l) // nothing new is due
	if got := assignedRuns(t, cli, layout); len(got) != len(assigned) {
		t.Errorf("a pass with nothing due assigned %d runs more", len(got)-len(assigned))
	}
}

// A member that advertises no protocol (a replica of an older commit) keeps
// every tick on the queue path: it would never claim an assignment, and
// its runs must still run.
func TestAnOldMemberKeepsEveryTickQueued(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/mixed/")
	l := newLeanLeader(t, cli, "/mixed/", leanJobs(), clock,
		memberKV(layout, "new", 0x10, assign.Protocol), memberKV(layout, "old", 0x20, 0))
	passes(t, l, clock, 3)
	if got := stored(t, cli, layout.Assignments()); len(got) != 0 {
		t.Errorf("assignments %v written with an old member in the cluster", got)
	}
	entries := stored(t, cli, layout.Queue())
	if want := runs.ID("fast", leanStart.Add(4*time.Second)); !strings.Contains(strings.Join(entries, " "), want) {
		t.Errorf("no entry for %s; entries %v", want, entries)
	}
}

// elect gives l a term of its own on its prefix.
func elect(t *testing.T, l *leader, name string) {
	t.Helper()
	key := l.d.Keys.Election() + name
	put, err := l.d.Client.Put(t.Context(), key, name)
	if err != nil {
		t.Fatal(err)
	}
	l.term = election.Leadership{Key: key, Rev: put.Header.Revision}
	l.fence = l.term.Fence()
}

// Two terms cannot authorize one tick twice: a second leader that planned
// from the cursors before the first one's window (and, from a newer
// members' view, picks other workers) finds the cursors moved, writes
// nothing and reads them again; the first, deposed, is refused by its fence.
func TestTwoTermsCannotAuthorizeATickTwice(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/terms/")
	ctx := t.Context()
	var jobs []config.Job
	for i := range 12 {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%02d", i), "@every 1s"))
	}
	cfg := jobstest.Config(jobs...)
	first := newLeanLeader(t, cli, "/terms/", cfg, clock,
		memberKV(layout, "r1", 0x10, assign.Protocol), memberKV(layout, "r2", 0x20, assign.Protocol))
	elect(t, first, "first")
	mustPass(t, first) // assignments, and the specs
	// The second sees the replicas on new sessions: every assignment key
	// it builds differs from the first's, so only the cursors stop it.
	second := newLeanLeader(t, cli, "/terms/", cfg, clock,
		memberKV(layout, "r1", 0x11, assign.Protocol), memberKV(layout, "r2", 0x21, assign.Protocol))
	elect(t, second, "second")
	if err := second.ticks.loadCursors(ctx); err != nil {
		t.Fatal(err)
	}
	first.book.mu.Lock()
	for k := range first.book.written {
		second.book.written[k] = true
	}
	first.book.mu.Unlock()

	clock.Advance(time.Second)
	now := clock.Now()
	due := make([]*config.Job, len(cfg.Jobs))
	for i := range cfg.Jobs {
		due[i] = &cfg.Jobs[i]
	}
	windows, rest := second.splitLean(due, now) // planned before the first's window
	if len(rest) != 0 || len(windows) != 1 {
		t.Fatalf("second leader: %d windows, %d jobs on the queue path; want all in one window", len(windows), len(rest))
	}
	before := len(assignedRuns(t, cli, layout))
	mustPass(t, first)
	assigned := assignedRuns(t, cli, layout)
	if len(assigned) != before+len(jobs) {
		t.Fatalf("first leader's second pass assigned %d runs, want %d", len(assigned)-before, len(jobs))
	}
	applied, err := second.authorize(ctx, windows[0])
	if !errors.Is(err, assign.ErrConflict) {
		t.Errorf("second leader's window over the same ticks: %v, want a conflict", err)
	}
	for job, ok := range applied {
		if ok {
			t.Errorf("second leader's window applied for %s", job)
		}
	}
	if got := assignedRuns(t, cli, layout); len(got) != len(assigned) {
		t.Errorf("%d runs assigned after the second leader's window, want %d", len(got), len(assigned))
	}
	want, _ := first.cursors.get("j00")
	if got, _ := second.cursors.get("j00"); !got.Equal(want) {
		t.Errorf("second leader's cursor of j00 after the conflict: %s, want the stored %s", got, want)
	}

	// The first, deposed, is refused by its fence.
	if _, err := cli.Delete(ctx, first.term.Key); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := first.pass(ctx); !errors.Is(err, errNotLeader) {
		t.Errorf("deposed leader's pass: %v, want not leader", err)
	}
	if got := assignedRuns(t, cli, layout); len(got) != len(assigned) {
		t.Errorf("a deposed leader assigned %d runs", len(got)-len(assigned))
	}
}

// A spec that only assignments name (their runs' entries are gone or never
// were) is not collected as unused: the worker reads it at its claim.
func TestAnAssignedTicksSpecIsNotCollected(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/specgc/")
	ctx := t.Context()
	l := newLeanLeader(t, cli, "/specgc/", leanJobs(), clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	withSpecViews(l)
	l.d.SpecGrace = 5 * time.Second
	unused := map[string]time.Time{}
	for i := range 12 {
		mustPass(t, l)
		// The queued ticks ran: no entry refers to the spec any more.
		if _, err := cli.Delete(ctx, layout.Queue(), clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		loadSpecs(t, l)
		if err := (&specCollector{base: l.base, book: l.book}).once(ctx, unused); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, layout.Assignments(), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			a, err := assign.Decode(layout, string(kv.Key), kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range a.Jobs {
				if key := layout.Spec(j.Name, j.SpecRef); !specExists(t, cli, key) {
					t.Fatalf("second %d: spec %s of assigned run %s was collected", i, key, a.RunID(j.Name))
				}
			}
		}
		clock.Advance(time.Second)
	}
	if n := len(assignedRuns(t, cli, layout)); n < 5 {
		t.Fatalf("%d runs assigned in 12 seconds; the test needs the lean path", n)
	}
}

// assignmentsOf are the assignments naming job, by run id.
func assignmentsOf(t *testing.T, cli *clientv3.Client, layout keys.Layout, job string) map[string]assign.Assignment {
	t.Helper()
	resp, err := cli.Get(t.Context(), layout.Assignments(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]assign.Assignment{}
	for _, kv := range resp.Kvs {
		a, err := assign.Decode(layout, string(kv.Key), kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if a.Has(job) {
			out[a.RunID(job)] = a
		}
	}
	return out
}

// A pause withdraws a job's assigned ticks as it withdraws its queued
// ones: out of their assignments, the cursor back, so the pause is quiet
// and a resume plans them again, each once. An assignment a worker has
// begun claiming from (a claim marker) keeps its tick, and the cursor
// stays at it: no entry or record of that tick would stop a second write.
func TestAPauseWithdrawsUnclaimedAssignedTicks(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/withdraw/")
	ctx := t.Context()
	l := newLeanLeader(t, cli, "/withdraw/", leanJobs(), clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	passes(t, l, clock, 4)
	before := assignmentsOf(t, cli, layout, "fast")
	if len(before) < 2 {
		t.Fatalf("%d ticks of fast assigned; the test needs two", len(before))
	}
	var first assign.Assignment
	for _, a := range before {
		if first.At.IsZero() || a.At.Before(first.At) {
			first = a
		}
	}
	marker := layout.ClaimMarker(first.Worker, first.At, first.Group, 0)
	if _, err := cli.Put(ctx, marker, `["fast"]`); err != nil {
		t.Fatal(err)
	}

	setPaused(l, "fast", true)
	l.syncPaused()
	mustPass(t, l)
	after := assignmentsOf(t, cli, layout, "fast")
	if len(after) != 1 || after[first.RunID("fast")].Group != first.Group {
		t.Fatalf("after the pause fast is assigned %v; want only %s, which a worker claims from", keysOf(after), first.RunID("fast"))
	}
	pausedAt := clock.Now()
	if c, _ := l.cursors.get("fast"); c.Before(first.At) || c.After(latest(first.At, pausedAt)) {
		t.Errorf("cursor after the pause %s, want the claimed tick %s or the pause %s", c, first.At, pausedAt)
	}

	setPaused(l, "fast", false)
	l.syncPaused()
	passes(t, l, clock, 3)
	again := assignedRuns(t, cli, layout) // fails on a run assigned twice
	for id, a := range before {
		if !a.At.After(pausedAt) {
			continue // due while paused: not run, as a queued tick is not
		}
		if _, ok := again[id]; !ok && !slices.Contains(stored(t, cli, layout.JobQueue("fast")), id) {
			t.Errorf("%s, withdrawn by the pause, was not planned again after the resume", id)
		}
	}
}

func keysOf(m map[string]assign.Assignment) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A changed job's assigned ticks not yet due are planned again with the
// new spec: the assignments name the new spec ref.
func TestAChangedJobsAssignedTicksTakeTheNewSpec(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/change/")
	l := newLeanLeader(t, cli, "/change/", leanJobs(), clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	passes(t, l, clock, 2)
	old := assignmentsOf(t, cli, layout, "fast")
	if len(old) == 0 {
		t.Fatal("no tick of fast assigned; the test needs one")
	}
	changed := leanJobs()
	changed.Jobs[0].HTTP.URL = "http://127.0.0.1:1/changed"
	l.d.Config = func() *config.Config { return changed }
	l.syncJobs()
	for range 2 {
		mustPass(t, l)
	}
	var oldRef string
	for _, a := range old {
		for _, j := range a.Jobs {
			if j.Name == "fast" {
				oldRef = j.SpecRef
			}
		}
	}
	guard := clock.Now().Add(withdrawGuard)
	for id, a := range assignmentsOf(t, cli, layout, "fast") {
		for _, j := range a.Jobs {
			if j.Name == "fast" && j.SpecRef == oldRef && a.At.After(guard) {
				t.Errorf("%s, due after the change's guard, still runs the old spec", id)
			}
		}
	}
	assignedRuns(t, cli, layout) // fails on a run assigned twice
}

// A new leader elected a session TTL after the last one was killed finds
// a fast job's cursor that far behind its lookahead: 50 ticks of a job
// @every 100ms, none due within NearLookahead. It assigns them, ten a pass
// as the queue path spreads them (farCap), and queues none: sent to the
// queue path, they waited there until their instants, and every assigned
// run of the job meanwhile followed them (its claim compares that no
// entry of the job waits), where two ticks ran out of order and the older
// was skipped (test/bench's failover step after a SIGKILL).
func TestANewTermAssignsTheTicksBehindItsLookahead(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/behind/")
	cfg := jobstest.Config(jobstest.Job("fast", "@every 100ms"))
	members := []*mvccpb.KeyValue{memberKV(layout, "r1", 0x10, assign.Protocol), memberKV(layout, "r2", 0x20, assign.Protocol)}
	ttl := 5 * time.Second
	term := func(name string) *leader {
		l := newLeanLeader(t, cli, "/behind/", cfg, clock, members...)
		l.d.Lookahead = LookaheadFor(ttl)
		elect(t, l, name)
		if err := l.ticks.loadCursors(t.Context()); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Passes at one instant until the job is planned to its horizon.
	planned := func(l *leader) time.Time {
		var cursor time.Time
		for range 12 {
			mustPass(t, l)
			cursor, _ = l.cursors.get("fast")
		}
		if horizon := clock.Now().Add(l.d.Lookahead); cursor.Before(horizon.Add(-100 * time.Millisecond)) {
			t.Fatalf("fast planned to %s after 12 passes, want its horizon %s", cursor, horizon)
		}
		return cursor
	}
	cursor := planned(term("first"))

	clock.Advance(ttl) // the killed leader's lease, and the election
	planned(term("second"))
	if got := stored(t, cli, layout.Queue()); len(got) != 0 {
		t.Errorf("%d runs of fast queued (%v), want every tick assigned", len(got), got[:min(3, len(got))])
	}
	assigned := assignedRuns(t, cli, layout)
	for at := cursor.Add(100 * time.Millisecond); !at.After(clock.Now().Add(LookaheadFor(ttl))); at = at.Add(100 * time.Millisecond) {
		if _, ok := assigned[runs.ID("fast", at)]; !ok {
			t.Fatalf("%s not assigned by the new term; %d runs assigned", runs.ID("fast", at), len(assigned))
		}
	}
}
