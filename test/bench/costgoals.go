package main

import (
	"fmt"
	"runtime"
)

// Issue 38's goals ("a run at the floor's cost"), stated by the issue in
// absolute figures from its machine, beside the reference of the same run
// so that the two can be compared with the issue's table. The p99 ratios
// at 500 and 1,000 jobs and the replicas' 5 ÷ 3 are issue 24's rows
// (burstgoals.go) with the same targets, and are not repeated.
const (
	goalCostJobs       = 1000 // the step of the cost goals
	goalCostCPUMs      = 0.35 // etcd + replicas, ms per run, at most
	goalCostEtcdMs     = 0.20
	goalCostReplicasMs = 0.15
	goalCostIndexOps   = 8.0 // etcd index operations per run, at most
	goalCostEvents     = 1.0 // watch events decoded per replica per run, at most
	goalCostP50Jobs    = 500
	goalCostP50Ms      = 20.0 // p50 lateness at goalCostP50Jobs, at most
	goalCostKeepUpJobs = 4000 // a step held there: >= 98% delivered, p99 < 1 s
	goalCostOverload   = 0.8  // runs/s at twice the ceiling / the ceiling, at least
	// goalCostShedOps is what a shed tick may cost etcd, in index
	// operations: a share of a chunk's record (a record each costs ~4).
	goalCostShedOps = 1.0
	// The peer's figures at goalCostJobs in the issue's table (etcd +
	// replicas, ms per run): the CPU row divides the goals by them, and
	// ours by the reference's of the same run, so that the goals can be
	// read on a host slower or faster than the issue's.
	peerEtcdMs     = 0.13
	peerReplicasMs = 0.09
	// peerP50Ms: the peer's p50 lateness at goalCostP50Jobs in the issue's
	// table, for the p50 row's reading against the reference.
	peerP50Ms = 9.7
)

// costGoals are issue 38's rows, each "not measured" without its figures;
// lean, the lean floor of the same invocation or nil, bounds the keep-up
// row.
func costGoals(b *burstResult, lean *leanResult) []goal {
	return []goal{costCPUGoal(b), costOpsGoal(b), costEventsGoal(b), costP50Goal(b), costKeepUpGoal(b, lean, runtime.NumCPU()), costOverloadGoal(b)}
}

// costRow is a row of issue 38 that is "not measured" until set.
func costRow(b *burstResult, name, target string) goal {
	g := goal{Issue: 38, Name: name, Target: target, Measured: burstNotRun, Verdict: verdictNotMeasured}
	if b != nil {
		g.Measured = "(no step of its size with runs on both sides in -burst-jobs)"
	}
	return g
}

// costStep is the step of n jobs with runs on both sides, or nil.
func costStep(b *burstResult, n int) *burstStep {
	st := b.step(n)
	if st == nil || st.Ours.Runs == 0 || st.Ref.Runs == 0 {
		return nil
	}
	return st
}

func costCPUGoal(b *burstResult) goal {
	g := costRow(b, fmt.Sprintf("CPU per run at %d jobs, ms: etcd + replicas (etcd, replicas)", goalCostJobs),
		fmt.Sprintf("<= %.2f (%.2f, %.2f)", goalCostCPUMs, goalCostEtcdMs, goalCostReplicasMs))
	st := costStep(b, goalCostJobs)
	if st == nil {
		return g
	}
	o := st.Ours
	g.Measured = fmt.Sprintf("ours %s ms; reference %s ms; %s; %s", cpuMs(o), cpuMs(*st.Ref), hostNote(o.CPU), againstReference(o, *st.Ref))
	ok := o.cpuPerRun() <= goalCostCPUMs && o.EtcdCPUPerRun <= goalCostEtcdMs && o.ProcCPUPerRun <= goalCostReplicasMs
	return measuredGoal(g, o.cpuPerRun()/goalCostCPUMs, ok)
}

// againstReference is ours ÷ the reference's CPU per run beside the
// goals ÷ the peer's figures: the goals read as ratios, which hold on a
// host where both sides cost more than on the issue's (docs/performance.md,
// "The reference, calibrated").
func againstReference(o, ref burstSide) string {
	if ref.EtcdCPUPerRun <= 0 || ref.ProcCPUPerRun <= 0 {
		return "no reference figures to divide by"
	}
	return fmt.Sprintf("÷ the reference's %.2f (etcd %.2f, replicas %.2f) against the goals ÷ the peer's %.2f (%.2f, %.2f)",
		o.cpuPerRun()/ref.cpuPerRun(), o.EtcdCPUPerRun/ref.EtcdCPUPerRun, o.ProcCPUPerRun/ref.ProcCPUPerRun,
		goalCostCPUMs/(peerEtcdMs+peerReplicasMs), goalCostEtcdMs/peerEtcdMs, goalCostReplicasMs/peerReplicasMs)
}

func costOpsGoal(b *burstResult) goal {
	g := costRow(b, fmt.Sprintf("etcd index operations per run at %d jobs / %.0f", goalCostJobs, goalCostIndexOps), "<= 1.0")
	st := costStep(b, goalCostJobs)
	if st == nil {
		return g
	}
	g.Measured = fmt.Sprintf("ours %.2f, reference %.2f", st.Ours.IndexOpsPerRun, st.Ref.IndexOpsPerRun)
	r := st.Ours.IndexOpsPerRun / goalCostIndexOps
	return measuredGoal(g, r, r <= 1)
}

func costEventsGoal(b *burstResult) goal {
	g := costRow(b, fmt.Sprintf("watch events decoded per replica per run at %d jobs", goalCostJobs), fmt.Sprintf("<= %.1f", goalCostEvents))
	st := costStep(b, goalCostJobs)
	switch {
	case st == nil:
		return g
	case !st.Ours.EventsCounted:
		g.Measured = "(the replicas do not count their watch events)"
		return g
	}
	g.Measured = events(st.Ours) + kindsOf(st.Ours.EventsByKind)
	return measuredGoal(g, st.Ours.EventsPerProcRn, st.Ours.EventsPerProcRn <= goalCostEvents)
}

func costP50Goal(b *burstResult) goal {
	g := costRow(b, fmt.Sprintf("burst lateness p50 at %d jobs / %.0f ms", goalCostP50Jobs, goalCostP50Ms), "<= 1.0")
	st := costStep(b, goalCostP50Jobs)
	if st == nil || st.Ours.Lateness.N == 0 {
		return g
	}
	g.Measured = fmt.Sprintf("ours p50 %.1f ms, reference %.1f ms", st.Ours.Lateness.P50, st.Ref.Lateness.P50)
	if w := st.Ours.StartMarks; w != nil {
		// What ours waits before a run may start that the reference's
		// call does not: one etcd commit (startmarks.go).
		g.Measured += fmt.Sprintf(" (ours' start marks committed p50 %.1f ms after their instant)", w.P50)
	}
	if st.Ref.Lateness.P50 > 0 {
		// As the CPU row: read as a ratio, the goal holds on a host whose
		// lateness is not the issue's.
		g.Measured += fmt.Sprintf("; ÷ the reference's %.2f against the goal ÷ the peer's %.2f",
			st.Ours.Lateness.P50/st.Ref.Lateness.P50, goalCostP50Ms/peerP50Ms)
	}
	r := st.Ours.Lateness.P50 / goalCostP50Ms
	return measuredGoal(g, r, r <= 1)
}

// costKeepUpGoal: the step of 4,000 jobs held (>= 98% delivered, p99 <
// 1 s); the ratio is the share delivered over 98%. With a lean floor step
// of that size in the same invocation it says what that step needs of the
// host's cores at the least (keepUpBound).
func costKeepUpGoal(b *burstResult, lean *leanResult, cores int) goal {
	g := costRow(b, fmt.Sprintf("keeps up at %d jobs: delivered / %s, with p99 < %d ms", goalCostKeepUpJobs, pct(burstHeldDelivered), burstHeldP99Ms), ">= 1.0")
	st := costStep(b, goalCostKeepUpJobs)
	if st == nil {
		return g
	}
	o := st.Ours
	g.Measured = fmt.Sprintf("ours %s delivered, p99 %.0f ms; reference %s, p99 %.0f ms", pct(o.DeliveredFrac), o.Lateness.P99, pct(st.Ref.DeliveredFrac), st.Ref.Lateness.P99)
	g.Measured += keepUpBound(lean, st, cores)
	return measuredGoal(g, o.DeliveredFrac/burstHeldDelivered, o.held())
}

// keepUpBound is the least CPU a step of st.Jobs runs a second needs on
// this host, from figures of the same invocation: the protocol's own
// transactions driven by bare clients (the lean floor's step of that size
// with a slot a run, the one holding the most records a job), the
// reference's processes' work a run (a timer, the call and one put: less
// than a replica does), and the bench beside them (witness and drivers,
// as in the reference's step). Over the host's cores, no engine of this
// protocol keeps up there (docs/performance.md, Bounds). Empty without
// such a lean step.
func keepUpBound(lean *leanResult, st *burstStep, cores int) string {
	if lean == nil {
		return ""
	}
	var s *leanStep
	for i := range lean.Steps {
		l := &lean.Steps[i]
		if l.RunsPerInstant == st.Jobs && l.Slot && l.Runs > 0 && (s == nil || l.History > s.History) {
			s = l
		}
	}
	if s == nil {
		return ""
	}
	perSec := float64(st.Jobs) / 1000 // ms of CPU a run at this rate: cores
	etcd, procs, bench := s.EtcdCPUPerRun*perSec, st.Ref.ProcCPUPerRun*perSec, st.Ref.CPU["bench"]
	return fmt.Sprintf("; the least that step needs of this host: the protocol's transactions from bare clients (leanfloor, %d records a job, %.0f runs/s) %.3f ms a run, %.2f cores, + the reference's processes' work %.3f ms, %.2f + the bench %.2f = %.2f of %d cores",
		s.History, s.RunsPerSec, s.EtcdCPUPerRun, etcd, st.Ref.ProcCPUPerRun, procs, bench, etcd+procs+bench, cores)
}

// costOverloadGoal: at twice our ceiling, completed runs/s over the
// ceiling, every tick run or recorded, and what a shed tick costs etcd:
// the step's index operations beyond its runs at the ceiling step's
// operations per run, over the ticks it recorded skipped.
func costOverloadGoal(b *burstResult) goal {
	g := costRow(b, "twice the ceiling: completed runs/s / ceiling; every tick run or recorded; index operations per shed tick",
		fmt.Sprintf(">= %.1f; unaccounted <= %s; <= %.0f", goalCostOverload, pct(goalOverloadUnacc), goalCostShedOps))
	o, ceil := b.overload(), b.ceilingStep()
	if o == nil || ceil == nil || o.Runs == 0 {
		if b != nil {
			g.Measured = "(no step at twice our ceiling)"
		}
		return g
	}
	unacc := 0.0
	if o.Due > 0 {
		unacc = o.unaccounted() / float64(o.Due)
	}
	shedOps := 0.0
	if o.Skipped > 0 {
		shedOps = max(0, float64(o.Runs)*(o.IndexOpsPerRun-ceil.IndexOpsPerRun)) / o.Skipped
	}
	r := o.RunsPerSec / float64(b.CeilingOurs)
	g.Measured = fmt.Sprintf("%d jobs: %.0f runs/s (ceiling %d); %.0f recorded skipped, %s unaccounted (%s); %.1f index operations per shed tick (%.2f per run there, %.2f at the ceiling)",
		o.Jobs, o.RunsPerSec, b.CeilingOurs, o.Skipped, pct(unacc), o.unaccountedBy(), shedOps, o.IndexOpsPerRun, ceil.IndexOpsPerRun)
	return measuredGoal(g, r, r >= goalCostOverload && unacc <= goalOverloadUnacc && shedOps <= goalCostShedOps)
}

// overload is our side at twice the ceiling: the step run for it, or a
// step of that size among -burst-jobs.
func (b *burstResult) overload() *burstSide {
	if b == nil || b.CeilingOurs == 0 {
		return nil
	}
	if b.Overload != nil {
		return b.Overload
	}
	if st := b.step(2 * b.CeilingOurs); st != nil {
		return &st.Ours
	}
	return nil
}

// ceilingStep is our side at the ceiling, or nil.
func (b *burstResult) ceilingStep() *burstSide {
	if b == nil {
		return nil
	}
	if st := b.step(b.CeilingOurs); st != nil {
		return &st.Ours
	}
	return nil
}
