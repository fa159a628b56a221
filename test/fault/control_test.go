package fault

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// checkFabricated proves, on the control's own observed history, that the
// checker finds what G1 and G2 forbid when it is there: one tick that ran
// is taken away (G2 must report it unaccounted), and one recorded attempt
// is made to reach the witness again after its record (G1).
func checkFabricated(t *testing.T, h *History) {
	t.Helper()
	id, run := "", -1
	for i, x := range h.Runs {
		rec, ok := h.Records[x.RunID]
		j := slices.IndexFunc(h.Jobs, func(j Job) bool { return j.Name == x.Job })
		if x.Rejected || !ok || rec.Attempt != x.Attempt || rec.EndedAt.IsZero() || j < 0 || h.Jobs[j].Every <= 0 {
			continue
		}
		within := h.Jobs[j].StartingDeadline + h.SessionTTL + accountSlack
		if x.ScheduledAt.After(h.TicksFrom.Add(h.Jobs[j].Every)) && !x.ScheduledAt.Add(within).After(h.Now) {
			id, run = x.RunID, i
			break
		}
	}
	if run < 0 {
		t.Fatal("positive control: no recorded tick in G2's range to fabricate violations with")
	}
	missing := *h
	missing.Runs = slices.DeleteFunc(slices.Clone(h.Runs), func(x cluster.Run) bool { return x.RunID == id })
	missing.Records = maps.Clone(h.Records)
	delete(missing.Records, id)
	expectViolation(t, Check(&missing), "accounted: "+id, "a tick taken away")

	again := *h
	dup := h.Runs[run]
	dup.Start = h.Records[id].EndedAt.Add(2 * time.Second)
	dup.End, dup.Superseded, dup.Cancelled = dup.Start.Add(100*time.Millisecond), false, false
	// First among the runs: the checker reports five attempts after
	// their record in full, and the control's own may fill them.
	again.Runs = append([]cluster.Run{dup}, h.Runs...)
	expectViolation(t, Check(&again), "after record: "+id, "an attempt run again after its record")

	stranded := *h
	key := prefix + "slots/" + h.Records[id].Job + "/0"
	stranded.Left = append(slices.Clone(h.Left), Left{Key: key, At: h.Now.Add(-time.Hour)})
	expectViolation(t, Check(&stranded), "leftovers: "+key, "a slot held for an hour")
}

func expectViolation(t *testing.T, rep *Report, want, what string) {
	t.Helper()
	for _, v := range rep.Violations {
		if strings.HasPrefix(v, want) {
			t.Logf("positive control, %s (expected): %s", what, v)
			return
		}
	}
	t.Errorf("positive control: with %s the checker did not report %q", what, want)
}
