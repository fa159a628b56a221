package leader

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
)

// A changed job's assigned ticks are taken out of their assignments, one
// transaction an assignment, and planned again with the new spec. A
// leader that dies between those take-outs and the cursor's move back
// must lose none of them: the next term plans from the cursor, and a tick
// taken out ahead of it would be neither assigned, queued nor recorded.
// Each take-out moves the cursor back with it: the leader may die after
// the first of them, or after the last.
func TestALeaderDeadMidWithdrawalLosesNoTick(t *testing.T) {
	for _, afterFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("dies after the first take-out %v", afterFirst), func(t *testing.T) {
			deadMidWithdrawal(t, afterFirst)
		})
	}
}

func deadMidWithdrawal(t *testing.T, afterFirst bool) {
	cli, clock, layout := leanEtcd(t, "/midway/")
	ctx := t.Context()
	old := jobstest.Config(jobstest.HTTPJob("a", "@every 1s", "http://127.0.0.1:1/old"))
	members := memberKV(layout, "r1", 0x10, assign.Protocol)
	first := newLeanLeader(t, cli, "/midway/", old, clock, members)
	first.d.Lookahead = LookaheadFor(5 * time.Second)
	elect(t, first, "first")
	passes(t, first, clock, 2)
	assigned := assignmentsOf(t, cli, layout, "a")
	cut := clock.Now().Add(withdrawGuard)
	var ahead []string
	for id, a := range assigned {
		if a.At.After(cut) {
			ahead = append(ahead, id)
		}
	}
	if len(ahead) < 2 {
		t.Fatalf("%d ticks of a assigned past the guard; the test needs two", len(ahead))
	}

	// The job changes; the first leader takes its ticks out of their
	// assignments and dies before anything else (no cursor move of its
	// own, no planning).
	changed := jobstest.Config(jobstest.HTTPJob("a", "@every 1s", "http://127.0.0.1:1/new"))
	first.d.Config = func() *config.Config { return changed }
	back := first.withdrawer.cursorBack("a")
	wctx, die := context.WithCancel(ctx)
	defer die()
	if afterFirst {
		inner := back
		back = func(at time.Time) ([]clientv3.Cmp, []clientv3.Op, func()) {
			cmps, ops, moved := inner(at)
			return cmps, ops, func() { moved(); die() }
		}
	}
	first.assigns.mu.Lock()
	_, n, err := first.assigns.withdraw(wctx, "a", cut, cut, back)
	first.assigns.mu.Unlock()
	switch {
	case afterFirst && (n != 1 || err == nil):
		t.Fatalf("withdraw that dies after its first take-out: %d taken out, %v", n, err)
	case !afterFirst && (n != len(ahead) || err != nil):
		t.Fatalf("withdraw: %d taken out, %v; want %d", n, err, len(ahead))
	}
	if _, err := cli.Delete(ctx, first.term.Key); err != nil {
		t.Fatal(err)
	}

	second := newLeanLeader(t, cli, "/midway/", changed, clock, members)
	second.d.Lookahead = first.d.Lookahead
	elect(t, second, "second")
	if err := second.ticks.loadCursors(ctx); err != nil {
		t.Fatal(err)
	}
	mustPass(t, second)
	again := assignedRuns(t, cli, layout)
	queued := stored(t, cli, layout.JobQueue("a"))
	for _, id := range ahead {
		if _, isAssigned := again[id]; !isAssigned && !slices.Contains(queued, id) {
			t.Errorf("%s, taken out by the dead leader, was not planned again by the next", id)
		}
	}
}
