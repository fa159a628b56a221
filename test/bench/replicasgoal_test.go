package main

import (
	"math"
	"strings"
	"testing"
)

// The 5 ÷ 3 goal divides each 5-replica step by the mean of the 3-replica
// steps before and after it (the host's drift over the sitting cancels),
// and takes the median of several.
func TestReplicasGoalBracketsEachFiveReplicaStep(t *testing.T) {
	cpu := func(procs int, ms float64) burstSide {
		return side("ours", goalReplicasJobs, procs, 1, 30, 100, 0.3, ms)
	}
	for _, c := range []struct {
		name    string
		main    float64     // the first cluster's 3-replica step
		further []burstSide // -replicas 3,... beyond the first, in order
		want    float64
		verdict string
	}{
		// -replicas 3,5: the only base is the one before.
		{"3,5", 0.2, []burstSide{cpu(5, 0.26)}, 1.3, verdictNotMet},
		// -replicas 3,5,3: the host slowed; alone the 3 before says 1.3.
		{"3,5,3", 0.2, []burstSide{cpu(5, 0.26), cpu(3, 0.24)}, 0.26 / 0.22, verdictMet},
		// -replicas 3,5,3,5,3: ratios 0.26/0.22 and 0.30/0.22; the
		// median of two is their mean.
		{"3,5,3,5,3", 0.2, []burstSide{cpu(5, 0.26), cpu(3, 0.24), cpu(5, 0.30), cpu(3, 0.20)},
			(0.26/0.22 + 0.30/0.22) / 2, verdictNotMet},
		// A 5-replica step first has only the base after it.
		{"5 before 3", 0.2, []burstSide{cpu(3, 0.25)}, 0, verdictNotMeasured},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := burstOf(side("ours", goalReplicasJobs, 3, 1, 30, 100, 0.3, c.main), side("reference", goalReplicasJobs, 3, 1, 20, 90, 0.2, 0.1))
			b.ReplicaSteps = c.further
			g := replicasGoal(&b)
			if g.Verdict != c.verdict {
				t.Fatalf("verdict %q, want %q (%s)", g.Verdict, c.verdict, g.Measured)
			}
			if c.verdict == verdictNotMeasured {
				return
			}
			if math.Abs(*g.Ratio-c.want) > 1e-9 {
				t.Errorf("ratio %.4f, want %.4f (%s)", *g.Ratio, c.want, g.Measured)
			}
		})
	}
}

// Each bracket's figures are printed: the goal's line can be checked by
// hand against the steps' rows.
func TestReplicasGoalPrintsEveryBracket(t *testing.T) {
	b := burstOf(side("ours", goalReplicasJobs, 3, 1, 30, 100, 0.3, 0.2), side("reference", goalReplicasJobs, 3, 1, 20, 90, 0.2, 0.1))
	b.ReplicaSteps = []burstSide{side("ours", goalReplicasJobs, 5, 1, 30, 100, 0.3, 0.25), side("ours", goalReplicasJobs, 3, 1, 30, 100, 0.3, 0.3)}
	g := replicasGoal(&b)
	if !strings.Contains(g.Measured, "0.250 ms at 5 replicas") || !strings.Contains(g.Measured, "0.200, 0.300 at 3") {
		t.Errorf("measured %q does not give the step and both bases", g.Measured)
	}
}
