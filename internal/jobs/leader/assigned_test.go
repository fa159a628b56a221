package leader

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
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
