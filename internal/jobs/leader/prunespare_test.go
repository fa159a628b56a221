package leader

import (
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A record of a tick an assignment still names is kept beyond its job's
// limit, until the assignment is gone: the oldest of five records with a
// limit of two, named by a live assignment, stays while the two after it
// go; one named by an assignment that does not decode stays too. Once the
// assignments are gone, the next prune deletes both.
func TestPruneKeepsARecordAnAssignmentNames(t *testing.T) {
	j := jobstest.Job("j", "@every 1s")
	j.HistoryLimit = 2
	cli := etcdtest.Start(t).Client()
	l := newTestLeader(t, cli, "/spare/", jobstest.Config(j), clockwork.NewFakeClock())
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	var ticks []time.Time
	for i := range 5 {
		ticks = append(ticks, t0.Add(time.Duration(i)*time.Second))
		writeRecord(t, l, tickRecord("j", ticks[i], runs.Succeeded))
	}
	a := assign.Assignment{Worker: "r2.1f", At: ticks[0], Group: "j", Jobs: []assign.Job{{Name: "j", SpecRef: "x"}, {Name: "other", SpecRef: "y"}}}
	broken := l.d.Keys.Assignment("r3.2f", ticks[1], "j")
	if _, err := cli.Txn(t.Context()).Then(clientv3.OpPut(a.Key(l.d.Keys), a.Encode()), clientv3.OpPut(broken, "not json")).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := l.pruner.pruneJobs(t.Context(), []string{"j"}); err != nil {
		t.Fatal(err)
	}
	want := []string{runs.ID("j", ticks[0]), runs.ID("j", ticks[1]), runs.ID("j", ticks[3]), runs.ID("j", ticks[4])}
	if got := recordIDs(t, l, "j"); !slices.Equal(got, want) {
		t.Fatalf("records left %v, want %v: the two named by assignments, and the newest two", got, want)
	}
	if _, err := cli.Delete(t.Context(), l.d.Keys.Assignments(), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if err := l.pruner.pruneJobs(t.Context(), []string{"j"}); err != nil {
		t.Fatal(err)
	}
	if got, want := recordIDs(t, l, "j"), want[2:]; !slices.Equal(got, want) {
		t.Fatalf("records left %v once the assignments went, want %v", got, want)
	}
}

// recordIDs are the run ids of job's records, in key order.
func recordIDs(t *testing.T, l *leader, job string) []string {
	t.Helper()
	var out []string
	for _, k := range stored(t, l.d.Client, l.d.Keys.JobRuns(job)) {
		out = append(out, l.d.Keys.RecordRun(k))
	}
	return out
}

// The decider the kept record stands for: a worker ran its assignment's
// tick of claimed (a record: succeeded) and died before its other run
// ended, its assignment left behind; claimed's history went past its limit
// meanwhile and the leader pruned it. Resolving the dead worker must leave
// the succeeded record as it is: the tick ran once and is recorded once.
// With the record pruned, the resolution read the run as unrecorded and
// recorded it lost (and queued a retry), a second outcome of one tick.
func TestAPrunedHistoryLeavesAResolvedTickRecordedOnce(t *testing.T) {
	e := newResolveEnv(t, "/once/")
	e.cfg.Jobs[indexOf(e.cfg, "claimed")].HistoryLimit = 1
	dead, deadLease := e.member("r2")
	at := leanStart.Add(10 * time.Second)
	e.assign(dead, at, []string{"claimed", "other"}, "claimed", "other")
	ran := tickRecord("claimed", at, runs.Succeeded)
	ran.Attempt, ran.Holder = 1, dead
	writeRecord(t, e.l, ran)
	for i := 1; i <= 2; i++ { // later ticks, queued elsewhere
		writeRecord(t, e.l, tickRecord("claimed", at.Add(time.Duration(i)*time.Minute), runs.Succeeded))
	}
	if err := e.l.pruner.pruneJobs(e.ctx, []string{"claimed"}); err != nil {
		t.Fatal(err)
	}
	e.background(e.resolveDead)
	if err := e.clock.BlockUntilContext(e.ctx, 1); err != nil { // its first look done
		t.Fatal(err)
	}
	if _, err := e.cli.Revoke(e.ctx, deadLease); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the dead worker's assignment resolved", func() (bool, string) {
		return len(stored(t, e.cli, e.layout.WorkerAssignments(dead))) == 0, "its assignment is still there"
	})
	rec, err := runs.DecodeRecord([]byte(e.get(e.layout.Record("claimed", ran.RunID))))
	if err != nil || rec.Outcome != runs.Succeeded {
		t.Errorf("the tick that ran: record %+v (%v), want its succeeded record kept", rec, err)
	}
	if got := e.get(e.layout.Entry("claimed", ran.RunID)); got != "" {
		t.Errorf("the tick that ran was queued again: %s", got)
	}
	if other, err := runs.DecodeRecord([]byte(e.get(e.layout.Record("other", runs.ID("other", at))))); err != nil || other.Outcome != runs.Lost {
		t.Errorf("the run still running at the death: %+v (%v), want lost", other, err)
	}
}

// The assignments' values are read at the revision their keys were
// listed: a take-over between the two reads (assign.Store.Steal: the old
// key deleted, the same jobs put under a new one, in one transaction)
// would leave a later read with neither, and the record of a run it
// names would go.
func TestASpareReadsTheAssignmentsAtTheRevisionItListedThem(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	l := newTestLeader(t, cli, "/steal/", jobstest.Config(jobstest.Job("j", "@every 1s")), clockwork.NewFakeClock())
	at := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	a := assign.Assignment{Worker: "r2.1f", At: at, Group: "j", Jobs: []assign.Job{{Name: "j", SpecRef: "x"}}}
	put, err := cli.Put(t.Context(), a.Key(l.d.Keys), a.Encode())
	if err != nil {
		t.Fatal(err)
	}
	listed := put.Header.Revision
	b := a
	b.Worker = "r3.2f"
	if _, err := cli.Txn(t.Context()).Then(clientv3.OpDelete(a.Key(l.d.Keys)), clientv3.OpPut(b.Key(l.d.Keys), b.Encode())).Commit(); err != nil {
		t.Fatal(err)
	}
	spare, _, err := l.pruner.assignedRecords(t.Context(), []string{a.Key(l.d.Keys)}, listed)
	if err != nil {
		t.Fatal(err)
	}
	if !spare[l.d.Keys.Record("j", runs.ID("j", at))] {
		t.Errorf("spared %v: the run the listed assignment named at revision %d is not among them", spare, listed)
	}
}
