package main

import (
	"fmt"
	"sort"
	"strings"
)

// replicasGoal: replica CPU per run at 5 replicas over 3, at 1,000 jobs.
// Each count runs on a cluster of its own, minutes apart, and one count's
// figure moves by a fifth between runs on a shared host
// (docs/performance.md, "Replicas, 5 ÷ 3"): so each 5-replica step is
// divided by the mean of the 3-replica steps beside it in the run's order,
// the one before and the one after (-replicas 3,5,3 brackets it, and a
// drift of the host over the three steps cancels to first order), and of
// several 5-replica steps (-replicas 3,5,3,5,3) the median ratio is the
// figure.
func replicasGoal(b *burstResult) goal {
	g := goal{Issue: 24, Name: fmt.Sprintf("replica CPU per run, %d replicas / %d, at %d jobs", goalReplicasMore, goalReplicasBase, goalReplicasJobs),
		Target: fmt.Sprintf("<= %.1f", goalReplicasCPURatio), Measured: burstNotRun, Verdict: verdictNotMeasured}
	if b == nil {
		return g
	}
	brackets := bracketed(b.replicasSides())
	if len(brackets) == 0 {
		g.Measured = fmt.Sprintf("(needs a %d-job step at %d and at %d replicas: -replicas %d,%d,%d and %d in -burst-jobs)",
			goalReplicasJobs, goalReplicasBase, goalReplicasMore, goalReplicasBase, goalReplicasMore, goalReplicasBase, goalReplicasJobs)
		return g
	}
	ratios := make([]float64, len(brackets))
	parts := make([]string, len(brackets))
	for i, br := range brackets {
		ratios[i] = br.ratio()
		parts[i] = br.String()
	}
	r := median(ratios)
	g.Measured = strings.Join(parts, "; ")
	if len(brackets) > 1 {
		g.Measured = fmt.Sprintf("median of %d: %s", len(brackets), g.Measured)
	}
	return measuredGoal(g, r, r <= goalReplicasCPURatio)
}

// replicasSides are ours at goalReplicasJobs with runs, in the order they
// ran: the first cluster's step, then each further -replicas count's.
func (b *burstResult) replicasSides() []burstSide {
	var out []burstSide
	add := func(s burstSide) {
		if s.Jobs == goalReplicasJobs && s.Runs > 0 && s.ProcCPUPerRun > 0 {
			out = append(out, s)
		}
	}
	for _, st := range b.Steps {
		add(st.Ours)
	}
	for _, s := range b.ReplicaSteps {
		add(s)
	}
	return out
}

// bracket is a 5-replica step and the 3-replica steps next to it.
type bracket struct {
	more  burstSide
	bases []burstSide // the nearest before, the nearest after: one or both
}

// bracketed pairs each goalReplicasMore side of sides (in run order) with
// the nearest goalReplicasBase side before it and after it; a side with
// neither is left out.
func bracketed(sides []burstSide) []bracket {
	var out []bracket
	for i, s := range sides {
		if s.Procs != goalReplicasMore {
			continue
		}
		br := bracket{more: s}
		for j := i - 1; j >= 0; j-- {
			if sides[j].Procs == goalReplicasBase {
				br.bases = append(br.bases, sides[j])
				break
			}
		}
		for j := i + 1; j < len(sides); j++ {
			if sides[j].Procs == goalReplicasBase {
				br.bases = append(br.bases, sides[j])
				break
			}
		}
		if len(br.bases) > 0 {
			out = append(out, br)
		}
	}
	return out
}

// ratio is the 5-replica figure over the mean of its bases'.
func (br bracket) ratio() float64 {
	var sum float64
	for _, s := range br.bases {
		sum += s.ProcCPUPerRun
	}
	return br.more.ProcCPUPerRun / (sum / float64(len(br.bases)))
}

// String: "0.250 ms at 5 replicas (events per replica per run 0.31) ÷
// 0.200, 0.220 at 3 (0.30, 0.29) = 1.19".
func (br bracket) String() string {
	ms := make([]string, len(br.bases))
	ev := make([]string, len(br.bases))
	for i, s := range br.bases {
		ms[i], ev[i] = fmt.Sprintf("%.3f", s.ProcCPUPerRun), events(s)
	}
	return fmt.Sprintf("%.3f ms at %d replicas (events per replica per run %s) ÷ %s at %d (%s) = %.2f",
		br.more.ProcCPUPerRun, goalReplicasMore, events(br.more), strings.Join(ms, ", "), goalReplicasBase, strings.Join(ev, ", "), br.ratio())
}

// median of xs (not empty): the middle one, or the mean of the two.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
