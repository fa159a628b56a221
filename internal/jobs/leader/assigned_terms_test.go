package leader

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

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
