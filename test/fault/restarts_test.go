package fault

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// Runs cut by a graceful restart are counted with how they were recorded;
// one that neither ran again nor was recorded interrupted is reported, and
// is a violation once History.RequireResumed says the outcome exists.
func TestCheckerCutRuns(t *testing.T) {
	id := runs.ID("j", tickAt(4))
	cutRun := cluster.Run{Job: "j", RunID: id, ScheduledAt: tickAt(4), Attempt: 1, Token: 100, Holder: "a",
		Start: tickAt(4).Add(100 * time.Millisecond), End: tickAt(7).Add(100 * time.Millisecond), Cancelled: true, Status: 0}
	tests := []struct {
		name     string
		change   func(h *History)
		want     string // a violation; "" = none of "restart:"
		reported int    // Unenforced
		cuts     string
	}{
		{"recorded cancelled, not enforced", func(*History) {}, "", 1,
			"cut_runs=1 cut_recorded=cancelled:1 cut_resumed=0 cut_interrupted=0 cut_unresumed=1"},
		{"recorded cancelled, enforced", func(h *History) { h.RequireResumed = true },
			"restart: " + id + "#1 (token 100) was cut by the restart of a at 00:00:05.000, recorded cancelled", 0,
			"cut_runs=1 cut_recorded=cancelled:1 cut_resumed=0 cut_interrupted=0 cut_unresumed=1"},
		{"recorded interrupted", func(h *History) {
			h.RequireResumed = true
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 1, Outcome: interrupted, EndedAt: tickAt(7)}
		}, "", 0, "cut_runs=1 cut_recorded=interrupted:1 cut_resumed=0 cut_interrupted=1 cut_unresumed=0"},
		{"ran again elsewhere", func(h *History) {
			h.RequireResumed = true
			h.Runs = append(h.Runs, cluster.Run{Job: "j", RunID: id, ScheduledAt: tickAt(4), Attempt: 2, Token: 200, Holder: "b",
				Start: tickAt(7).Add(300 * time.Millisecond), End: tickAt(8), Status: 200})
		}, "", 0, "cut_runs=1 cut_recorded=cancelled:1 cut_resumed=1 cut_interrupted=0 cut_unresumed=0"},
		{"ended before the restart", func(h *History) {
			h.Restarts[0].Term, h.Restarts[0].Exit = tickAt(9), tickAt(10)
		}, "", 0, "cut_runs=0 cut_recorded=n/a cut_resumed=0 cut_interrupted=0 cut_unresumed=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tickHistory()
			h.Jobs[0].MaxConcurrency = 5
			h.Runs[3] = cutRun
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 1, Outcome: runs.Cancelled, EndedAt: tickAt(7)}
			h.Restarts = []Restart{{Replica: "a", Term: tickAt(5), Exit: tickAt(7).Add(50 * time.Millisecond)}}
			tt.change(h)
			rep := Check(h)
			if s := rep.Cuts.String(); s != tt.cuts {
				t.Errorf("cuts: got %q, want %q", s, tt.cuts)
			}
			if len(rep.Unenforced) != tt.reported {
				t.Errorf("reported %q; want %d", rep.Unenforced, tt.reported)
			}
			wantViolation(t, rep.Violations, "restart:", tt.want)
		})
	}
}

// An upgrade scenario fails on safety only: liveness findings are moved to
// the reported list, safety ones stay violations.
func TestCheckerUpgradeKeepsSafetyViolations(t *testing.T) {
	rep := &Report{Violations: []string{"accounted: j@x neither", "twice: j@x#1 ran twice", "healed: job j", "after record: j@y#1", "overlap: job j"}}
	splitLiveness(rep)
	if got, want := strings.Join(rep.Violations, "|"), "twice: j@x#1 ran twice|after record: j@y#1|overlap: job j"; got != want {
		t.Errorf("violations %q; want %q", got, want)
	}
	if got, want := strings.Join(rep.Unenforced, "|"), "accounted: j@x neither|healed: job j"; got != want {
		t.Errorf("reported %q; want %q", got, want)
	}
}
