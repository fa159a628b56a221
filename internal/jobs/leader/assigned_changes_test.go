package leader

import (
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
)

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
