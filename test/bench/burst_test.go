package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

func TestTallyBurst(t *testing.T) {
	from := time.Date(2026, 11, 25, 12, 0, 10, 0, time.UTC)
	to := from.Add(3 * time.Second)
	until := to.Add(2 * time.Second)
	at := func(job string, due, late time.Duration) cluster.Run {
		return cluster.Run{Job: job, ScheduledAt: from.Add(due), Start: from.Add(due + late)}
	}
	runs := []cluster.Run{
		at("b1-00000", 0, 20*time.Millisecond),
		at("b1-00001", 0, 40*time.Millisecond),
		at("b1-00001", 0, 50*time.Millisecond),               // the same tick again: a duplicate
		at("b1-00000", time.Second, 900*time.Millisecond),    // late, inside the window
		at("b1-00000", 2*time.Second, 2500*time.Millisecond), // arrives within the grace
		at("b1-00001", 2*time.Second, 5*time.Second),         // after the grace: not delivered
		at("b1-00001", -time.Second, 1500*time.Millisecond),  // due before the window: a run, no tick
		at("b1-00000", 3*time.Second, 0),                     // due at the window's end: neither
		at("bref2-00000", 0, 0),                              // another step's job
		at("b10-00000", time.Second, 0),                      // nor is b10- a job of b1-
	}
	tl := tallyBurst(runs, "b1-", 2, from, to, until)
	if tl.due != 6 || tl.delivered != 4 || tl.duplicates != 1 {
		t.Errorf("due %d, delivered %d, duplicates %d; want 6, 4, 1", tl.due, tl.delivered, tl.duplicates)
	}
	// In [from, to): both arrivals of tick 0 of job 1, job 0's ticks 0 and
	// 1, and job 1's run due before the window.
	if tl.runs != 5 {
		t.Errorf("%d runs arrived in the window, want 5", tl.runs)
	}
	d := distOf(tl.lateness)
	if d.N != 4 || d.Max != 2500 || d.P50 != 40 {
		t.Errorf("lateness %s; want n=4, p50 40 ms, max 2500 ms", d)
	}

	// The step's sharded job: its shard runs in the window are runs, and
	// no tick of the step's jobs.
	job := shardJob("b1-")
	runs = append(runs, at(job, 0, 10*time.Millisecond), at(job, 0, 20*time.Millisecond), at(job, 3*time.Second, 0))
	tl = tallyBurst(runs, "b1-", 2, from, to, until)
	tl.countShards(runs, job, from, to)
	if tl.due != 6 || tl.delivered != 4 || tl.duplicates != 1 || tl.runs != 7 || tl.shardRuns != 2 {
		t.Errorf("with shards: due %d, delivered %d, duplicates %d, runs %d, shard runs %d; want 6, 4, 1, 7, 2",
			tl.due, tl.delivered, tl.duplicates, tl.runs, tl.shardRuns)
	}
}

func TestSumMetrics(t *testing.T) {
	text := `# HELP scheduler_runs_skipped_total x
# TYPE scheduler_runs_skipped_total counter
scheduler_runs_skipped_total{job="a",reason="missed"} 3
scheduler_runs_skipped_total{job="a",reason="overlap"} 4
scheduler_runs_skipped_total{job="b",reason="missed"} 1
scheduler_runs_skipped_totally 100
etcd_mvcc_put_total 12
`
	out := map[string]float64{"etcd_mvcc_put_total": 1}
	if err := sumMetrics(strings.NewReader(text), []string{runsSkipped, runsMissed, mvccPut, mvccRange}, out); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{runsSkipped: 8, runsMissed: 4, mvccPut: 13}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s = %v, want %v", k, out[k], v)
		}
	}
	if _, ok := out[mvccRange]; ok {
		t.Errorf("%s present without samples", mvccRange)
	}
}

// side is a burst step's figures as the goals read them.
func side(engine string, jobs, procs int, delivered, p50, p99, etcdMs, procMs float64) burstSide {
	return burstSide{Engine: engine, Jobs: jobs, Procs: procs, Due: jobs * 20, Delivered: int(delivered * float64(jobs*20)),
		DeliveredFrac: delivered, Runs: jobs * 20, RunsPerSec: delivered * float64(jobs),
		Lateness: dist{N: 100, P50: p50, P99: p99}, EtcdCPUPerRun: etcdMs, ProcCPUPerRun: procMs}
}

func burstFixture() burstResult {
	return burstOf(
		side("ours", 500, 3, 1, 200, 430, 0.8, 0.6), side("reference", 500, 3, 1, 20, 100, 0.2, 0.2),
		side("ours", 1000, 3, 0.99, 270, 640, 0.6, 0.5), side("reference", 1000, 3, 1, 25, 500, 0.5, 0.4),
		side("ours", 2000, 3, 0.63, 7400, 15000, 0.7, 0.6), side("reference", 2000, 3, 1, 60, 290, 0.15, 0.1),
		side("ours", 4000, 3, 0.08, 11000, 19000, 0.8, 0.7), side("reference", 4000, 3, 0.99, 150, 470, 0.15, 0.1))
}

// burstOf is a result of 3 replicas whose steps are sides in pairs
// (ours, then the reference's), with both ceilings.
func burstOf(sides ...burstSide) burstResult {
	b := burstResult{Replicas: 3, RefProcs: 3}
	var ours, refs []burstSide
	for i := 0; i+1 < len(sides); i += 2 {
		ref := sides[i+1]
		b.Steps = append(b.Steps, burstStep{Jobs: sides[i].Jobs, Ours: sides[i], Ref: &ref})
		ours, refs = append(ours, sides[i]), append(refs, ref)
		b.LargestStep = max(b.LargestStep, sides[i].Jobs)
	}
	b.CeilingOurs, b.CeilingRef = ceiling(ours), ceiling(refs)
	return b
}

func TestBurstGoals(t *testing.T) {
	b := burstFixture()
	if b.CeilingOurs != 1000 || b.CeilingRef != 4000 {
		t.Fatalf("ceilings %d / %d, want 1000 / 4000", b.CeilingOurs, b.CeilingRef)
	}
	over := side("ours", 2000, 3, 0.5, 800, 1500, 0.5, 0.5)
	over.Skipped = 19_500 // of 40,000 due: 20,000 ran, 500 unaccounted (1.25%)
	b.Overload = &over
	five := side("ours", 1000, 5, 1, 300, 700, 0.6, 0.65)
	b.ReplicaSteps = []burstSide{five}
	want := map[string]wantGoal{
		"burst ceiling (largest N with >= 98% of ticks delivered, p99 < 1 s): ours / reference":                               {0.25, verdictNotMet},
		"burst CPU per run (etcd + replicas) / reference's (etcd + processes), at 1000 jobs":                                  {1.1 / 0.9, verdictMet},
		"burst lateness p99 / reference's, at 500 jobs":                                                                       {4.3, verdictNotMet},
		"burst lateness p99 / reference's, at 1000 jobs":                                                                      {1.28, verdictMet},
		"overload (twice our ceiling offered): completed runs/s / ceiling; every tick run or recorded; p50 of the runs < 1 s": {1.0, verdictNotMet},
		"replica CPU per run, 5 replicas / 3, at 1000 jobs":                                                                   {1.3, verdictNotMet},
	}
	goals := burstGoals(&b)
	checkGoals(t, goals, 24, want)
	if !strings.Contains(goals[0].Measured, "held the largest step") {
		t.Errorf("ceiling row does not say the reference held every step: %q", goals[0].Measured)
	}
}

// The overload goal needs all three: the runs, every tick accounted, and
// the runs that start on time.
func TestOverloadGoal(t *testing.T) {
	b := burstFixture()
	ok := side("ours", 2000, 3, 0.5, 800, 1500, 0.5, 0.5)
	ok.Skipped = 20_000
	for _, c := range []struct {
		name    string
		change  func(*burstSide)
		verdict string
	}{
		{"all three", func(*burstSide) {}, verdictMet},
		{"too few runs", func(s *burstSide) { s.RunsPerSec = 850 }, verdictNotMet},
		{"ticks unaccounted", func(s *burstSide) { s.Skipped = 19_500 }, verdictNotMet},
		{"late runs", func(s *burstSide) { s.Lateness.P50 = 1000 }, verdictNotMet},
	} {
		o := ok
		c.change(&o)
		b.Overload = &o
		if g := overloadGoal(&b); g.Verdict != c.verdict {
			t.Errorf("%s: %q, want %q (%s)", c.name, g.Verdict, c.verdict, g.Measured)
		}
	}
	// -burst-overload=false: a step of -burst-jobs at twice the ceiling
	// is the overload step.
	b.Overload = nil
	if g := overloadGoal(&b); g.Ratio == nil || abs(*g.Ratio-1.26) > 1e-9 || !strings.Contains(g.Measured, "2000 jobs") {
		t.Errorf("with a step at twice the ceiling: %q %v (%s)", g.Verdict, g.Ratio, g.Measured)
	}
	b.Steps = slices.DeleteFunc(b.Steps, func(st burstStep) bool { return st.Jobs == 2*b.CeilingOurs })
	if g := overloadGoal(&b); g.Verdict != verdictNotMeasured || g.Ratio != nil {
		t.Errorf("without an overload step: %q %v", g.Verdict, g.Ratio)
	}
}

func TestBurstGoalsNotMeasured(t *testing.T) {
	for _, g := range burstGoals(nil) {
		if g.Verdict != verdictNotMeasured || g.Ratio != nil {
			t.Errorf("%q without the scenario: %q", g.Name, g.Verdict)
		}
	}
	b := burstFixture()
	for _, g := range burstGoals(&b) {
		if strings.HasPrefix(g.Name, "replica CPU") && (g.Verdict != verdictNotMeasured || !strings.Contains(g.Measured, "-replicas 3,5")) {
			t.Errorf("replica goal without a 5-replica step: %q %q", g.Verdict, g.Measured)
		}
	}
}

func TestPrintBurstPutsTheReferenceBesideEveryStep(t *testing.T) {
	b := burstFixture()
	var w bytes.Buffer
	printBurst(&w, []report{{Scenario: "burst", Data: b}})
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| jobs") {
			rows = append(rows, l)
		}
	}
	if len(rows) != len(b.Steps) {
		t.Fatalf("%d step rows, want %d:\n%s", len(rows), len(b.Steps), w.String())
	}
	if !strings.Contains(rows[1], "| 1000 ") || !strings.Contains(rows[1], "25 / 500 / 0") || !strings.Contains(rows[1], "270 / 640 / 0") {
		t.Errorf("1000 row lacks ours or the reference's lateness: %s", rows[1])
	}
}

func TestParseRefWorker(t *testing.T) {
	o, err := parseRefWorker([]string{"-endpoints", "http://a,http://b", "-prefix", "/p/", "-witness", "http://w", "-name", "r-", "-from", "3", "-to", "7"})
	if err != nil || len(o.endpoints) != 2 || o.from != 3 || o.to != 7 {
		t.Errorf("%+v, %v", o, err)
	}
	if _, err := parseRefWorker([]string{"-endpoints", "http://a", "-prefix", "/p/", "-witness", "http://w", "-name", "r-", "-from", "3", "-to", "3"}); err == nil {
		t.Error("an empty job range was accepted")
	}
}

// Counters read before the window and at its end are scaled to the window
// by when they were read.
func TestPerWindow(t *testing.T) {
	before := map[string]float64{"time": 100, "revision": 1000, watchEvents: 50}
	after := map[string]float64{"time": 105, "revision": 1500, watchEvents: 550}
	d := perWindow(before, after, 4)
	if d["revision"] != 400 || d[watchEvents] != 400 {
		t.Errorf("%v; want 400 revisions and 400 events in a 4 s window of a 5 s span", d)
	}
	if _, ok := d["time"]; ok {
		t.Error("time is not a counter")
	}
}

// A step is held with both: >= 98% of its ticks delivered and p99 < 1 s.
func TestCeilingNeedsDeliveryAndP99(t *testing.T) {
	sides := []burstSide{
		side("ours", 500, 3, 1, 100, 900, 0, 0),
		side("ours", 1000, 3, 1, 100, 1000, 0, 0),   // p99 of a second
		side("ours", 2000, 3, 0.97, 100, 500, 0, 0), // 3% of ticks lost
	}
	if c := ceiling(sides); c != 500 {
		t.Errorf("ceiling %d, want 500", c)
	}
}

// Replicas without scheduler_watch_events_total (a commit before it, or
// the reference) show "-", not zero events.
func TestApplyEventsOnlyWhereCounted(t *testing.T) {
	tl := burstTally{due: 100, delivered: 100, runs: 100}
	var with, without burstSide
	with.Seconds, with.Procs, without.Seconds, without.Procs = 1, 3, 1, 3
	with.apply(tl, map[string]float64{watchEvents: 600, mvccPut: 300, mvccRange: 300}, 3)
	without.apply(tl, map[string]float64{mvccPut: 300, mvccRange: 300}, 3)
	if !with.EventsCounted || with.EventsPerProcRn != 2 || events(with) != "2.00" {
		t.Errorf("counted: %v, %v per replica per run, %q", with.EventsCounted, with.EventsPerProcRn, events(with))
	}
	if without.EventsCounted || events(without) != "-" {
		t.Errorf("not counted: %v, %q", without.EventsCounted, events(without))
	}
	if with.IndexOpsPerRun != 2 {
		t.Errorf("index ops per run %v, want (300 + 300) / 3 members / 100 runs = 2", with.IndexOpsPerRun)
	}
}

// Events are split by the kind of their key as the replicas label them,
// per replica and run, largest first in the step's line.
func TestApplySplitsEventsByKind(t *testing.T) {
	tl := burstTally{due: 100, delivered: 100, runs: 100}
	var s burstSide
	s.Seconds, s.Procs = 1, 3
	text := `scheduler_watch_events_total{kind="slots"} 600
scheduler_watch_events_total{kind="jobs/cursor"} 30
scheduler_watch_events_total{kind="assign"} 0
`
	d := map[string]float64{}
	if err := sumMetrics(strings.NewReader(text), append([]string{watchEvents}, eventKinds()...), d); err != nil {
		t.Fatal(err)
	}
	s.apply(tl, d, 3)
	if s.EventsPerProcRn != 2.1 {
		t.Errorf("%v events per replica per run, want 630 / 3 / 100 = 2.1", s.EventsPerProcRn)
	}
	if got, want := kindsOf(s.EventsByKind), " (slots 2.00, jobs/cursor 0.10)"; got != want {
		t.Errorf("by kind %q, want %q", got, want)
	}
}

// wantGoal is a goal row's expected ratio and verdict.
type wantGoal struct {
	ratio   float64
	verdict string
}

// checkGoals checks that goals are want's rows, of issue, each with its
// ratio and verdict.
func checkGoals(t *testing.T, goals []goal, issue int, want map[string]wantGoal) {
	t.Helper()
	if len(goals) != len(want) {
		t.Fatalf("%d goals, want %d", len(goals), len(want))
	}
	for _, g := range goals {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("unexpected goal %q", g.Name)
			continue
		}
		if g.Issue != issue || g.Ratio == nil || abs(*g.Ratio-w.ratio) > 1e-9 || g.Verdict != w.verdict {
			t.Errorf("%q: issue %d, ratio %v, verdict %q; want #%d, %v, %q (%s)", g.Name, g.Issue, g.Ratio, g.Verdict, issue, w.ratio, w.verdict, g.Measured)
		}
	}
}
