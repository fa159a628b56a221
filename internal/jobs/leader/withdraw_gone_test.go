package leader

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
)

// A reload that removes many jobs takes them out of each assignment in one
// rewrite, not one a job: the assignments ahead name every job due at
// their instant, and rewriting each once per removed job made a removal
// of a thousand jobs thousands of transactions of large values. An
// assignment a worker has begun claiming from keeps its ticks, as a single
// job's withdrawal keeps them.
func TestRemovedJobsLeaveEachAssignmentInOneRewrite(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/gone/")
	var jobs []config.Job
	for i := range 40 {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%02d", i), "@every 1s"))
	}
	l := newLeanLeader(t, cli, "/gone/", jobstest.Config(jobs...), clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	passes(t, l, clock, 3)
	before := assignmentVersions(t, cli, layout)
	if len(before) < 3 {
		t.Fatalf("%d assignments ahead; the test needs three", len(before))
	}
	var first assign.Assignment
	for _, a := range assignmentsOf(t, cli, layout, "j00") {
		if first.At.IsZero() || a.At.Before(first.At) {
			first = a
		}
	}
	if _, err := cli.Put(t.Context(), layout.ClaimMarker(first.Worker, first.At, first.Group, 0), `["j00"]`); err != nil {
		t.Fatal(err)
	}

	kept := jobstest.Config(jobs[30:]...)
	l.d.Config = func() *config.Config { return kept }
	l.syncJobs()
	mustPass(t, l)
	for key, v := range assignmentVersions(t, cli, layout) {
		if was, ok := before[key]; ok && v-was > 2 {
			t.Errorf("%s rewritten %d times for the removal of 30 jobs, want once (and once for the pass's own planning)", key, v-was)
		}
	}
	firstKey := first.Key(layout)
	for i := range 30 {
		name := jobs[i].Name
		for id, a := range assignmentsOf(t, cli, layout, name) {
			if a.Key(layout) != firstKey {
				t.Errorf("%s still assigned (%s) after its job was removed", id, a.Key(layout))
			}
		}
		if _, ok := assignmentsOf(t, cli, layout, name)[first.RunID(name)]; !ok {
			t.Errorf("%s was taken out of an assignment a worker claims from", first.RunID(name))
		}
	}
}

// assignmentVersions is each stored assignment's version (its writes).
func assignmentVersions(t *testing.T, cli *clientv3.Client, layout keys.Layout) map[string]int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), layout.Assignments(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Version
	}
	return out
}

// A job removed while another replica led (a reload beside a rolling
// restart) leaves ticks assigned ahead that this term's config does not
// name: its first look finds the job by its cursor past now and withdraws
// them, so no worker runs a removed job for a lookahead and a batch more.
func TestANewTermWithdrawsTheAssignedTicksOfAJobRemovedBeforeIt(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/gonebefore/")
	both := jobstest.Config(jobstest.Job("kept", "@every 1s"), jobstest.Job("removed", "@every 1s"))
	first := newLeanLeader(t, cli, "/gonebefore/", both, clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	elect(t, first, "first")
	passes(t, first, clock, 3)
	if len(assignmentsOf(t, cli, layout, "removed")) == 0 {
		t.Fatal("no tick of the job assigned ahead; the test needs some")
	}

	second := newLeanLeader(t, cli, "/gonebefore/", jobstest.Config(jobstest.Job("kept", "@every 1s")), clock,
		memberKV(layout, "r1", 0x10, assign.Protocol))
	elect(t, second, "second")
	if err := second.ticks.loadCursors(t.Context()); err != nil {
		t.Fatal(err)
	}
	second.jobs = nil // the term's first look, once the cursors are read (as leader.Run does)
	second.syncJobs()
	mustPass(t, second)
	for id, a := range assignmentsOf(t, cli, layout, "removed") {
		t.Errorf("%s still assigned to %s after the job was removed before this term", id, a.Worker)
	}
	if len(assignmentsOf(t, cli, layout, "kept")) == 0 {
		t.Error("the job still configured lost its assigned ticks")
	}
}
