package main

import "fmt"

// Issue 24's goals 2-6: ours against the reference of the same run (goal 1
// is the scenario itself).
const (
	goalCeilingRatio     = 0.8  // our ceiling / the reference's, at least
	goalBurstCPURatio    = 1.3  // CPU per run (etcd + processes), ours / the reference's, at most
	goalBurstCPUJobs     = 1000 // ... at this step
	goalBurstP99Ratio    = 1.5  // p99 lateness, ours / the reference's, at most
	goalOverloadRuns     = 0.9  // runs/s at twice our ceiling / the ceiling, at least
	goalOverloadP50Ms    = 1000 // p50 lateness of the runs that start there, under
	goalOverloadUnacc    = 0.01 // ticks neither run nor recorded skipped, at most this share of those due
	goalReplicasJobs     = 1000 // the step of goal 6
	goalReplicasMore     = 5    // replica CPU per run at this many replicas ...
	goalReplicasBase     = 3    // ... over this many, at most:
	goalReplicasCPURatio = 1.2
)

// burstGoals are issue 24's rows, each "not measured" without its figures.
func burstGoals(b *burstResult) []goal {
	out := []goal{ceilingGoal(b), cpuGoal(b)}
	for _, n := range []int{500, 1000} {
		out = append(out, latenessGoal(b, n))
	}
	return append(out, overloadGoal(b), replicasGoal(b))
}

const burstNotRun = "(-scenario burst did not run)"

// measuredGoal sets g's ratio and verdict.
func measuredGoal(g goal, ratio float64, ok bool) goal {
	g.Ratio, g.Verdict = &ratio, verdict(ok)
	return g
}

// step is the step of n jobs with the reference beside it, or nil.
func (b *burstResult) step(n int) *burstStep {
	if b == nil {
		return nil
	}
	for i := range b.Steps {
		if b.Steps[i].Jobs == n && b.Steps[i].Ref != nil {
			return &b.Steps[i]
		}
	}
	return nil
}

func ceilingGoal(b *burstResult) goal {
	g := goal{Issue: 24, Name: "burst ceiling (largest N with >= 98% of ticks delivered, p99 < 1 s): ours / reference",
		Target: fmt.Sprintf(">= %.1f", goalCeilingRatio), Measured: burstNotRun, Verdict: verdictNotMeasured}
	switch {
	case b == nil:
		return g
	case b.CeilingRef == 0:
		g.Measured = fmt.Sprintf("ours %d; the reference held no step", b.CeilingOurs)
		return g
	}
	r := float64(b.CeilingOurs) / float64(b.CeilingRef)
	g.Measured = fmt.Sprintf("ours %d jobs, reference %d", b.CeilingOurs, b.CeilingRef)
	if b.CeilingRef == b.LargestStep {
		g.Measured += " (it held the largest step: its ceiling may be higher; add larger -burst-jobs)"
	}
	return measuredGoal(g, r, r >= goalCeilingRatio)
}

func cpuGoal(b *burstResult) goal {
	g := goal{Issue: 24, Name: fmt.Sprintf("burst CPU per run (etcd + replicas) / reference's (etcd + processes), at %d jobs", goalBurstCPUJobs),
		Target: fmt.Sprintf("<= %.1f", goalBurstCPURatio), Measured: burstNotRun, Verdict: verdictNotMeasured}
	st := b.step(goalBurstCPUJobs)
	if st == nil || st.Ref.cpuPerRun() <= 0 || st.Ours.Runs == 0 {
		if b != nil {
			g.Measured = fmt.Sprintf("(no %d step with runs on both sides in -burst-jobs)", goalBurstCPUJobs)
		}
		return g
	}
	r := st.Ours.cpuPerRun() / st.Ref.cpuPerRun()
	g.Measured = fmt.Sprintf("ours %s ms, reference %s ms; index ops per run %.2f / %.2f; revisions per run %.3f / %.3f; events decoded per replica per run %s; %s",
		cpuMs(st.Ours), cpuMs(*st.Ref), st.Ours.IndexOpsPerRun, st.Ref.IndexOpsPerRun, st.Ours.RevsPerRun, st.Ref.RevsPerRun, events(st.Ours), hostNote(st.Ours.CPU))
	return measuredGoal(g, r, r <= goalBurstCPURatio)
}

func latenessGoal(b *burstResult, n int) goal {
	g := goal{Issue: 24, Name: fmt.Sprintf("burst lateness p99 / reference's, at %d jobs", n),
		Target: fmt.Sprintf("<= %.1f", goalBurstP99Ratio), Measured: burstNotRun, Verdict: verdictNotMeasured}
	st := b.step(n)
	if st == nil || st.Ref.Lateness.N == 0 || st.Ref.Lateness.P99 <= 0 || st.Ours.Lateness.N == 0 {
		if b != nil {
			g.Measured = fmt.Sprintf("(no %d step with samples on both sides in -burst-jobs)", n)
		}
		return g
	}
	r := st.Ours.Lateness.P99 / st.Ref.Lateness.P99
	g.Measured = fmt.Sprintf("ours p99 %.0f ms (delivered %s), reference %.0f ms (%s)", st.Ours.Lateness.P99, pct(st.Ours.DeliveredFrac), st.Ref.Lateness.P99, pct(st.Ref.DeliveredFrac))
	return measuredGoal(g, r, r <= goalBurstP99Ratio)
}

// overloadGoal: at twice our ceiling, runs/s over the ceiling, with every
// tick accounted and the runs that start on time.
func overloadGoal(b *burstResult) goal {
	g := goal{Issue: 24, Name: "overload (twice our ceiling offered): completed runs/s / ceiling; every tick run or recorded; p50 of the runs < 1 s",
		Target:   fmt.Sprintf(">= %.1f; unaccounted <= %s; p50 < %d ms", goalOverloadRuns, pct(goalOverloadUnacc), goalOverloadP50Ms),
		Measured: burstNotRun, Verdict: verdictNotMeasured}
	switch {
	case b == nil:
		return g
	case b.overload() == nil:
		g.Measured = "(no overload step: no step held, or -burst-overload=false and no step at twice the ceiling)"
		return g
	}
	o := *b.overload()
	r := o.RunsPerSec / float64(b.CeilingOurs)
	unacc := 0.0
	if o.Due > 0 {
		unacc = o.unaccounted() / float64(o.Due)
	}
	g.Measured = fmt.Sprintf("%d jobs: %.0f runs/s (ceiling %d); of %d ticks due %d ran, %.0f recorded skipped (%.0f missed), %s unaccounted (%s); p50 %.0f ms",
		o.Jobs, o.RunsPerSec, b.CeilingOurs, o.Due, o.Delivered, o.Skipped, o.MissedRecorded, pct(unacc), o.unaccountedBy(), o.Lateness.P50)
	return measuredGoal(g, r, r >= goalOverloadRuns && unacc <= goalOverloadUnacc && o.Lateness.N > 0 && o.Lateness.P50 < goalOverloadP50Ms)
}
