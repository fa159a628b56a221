package fault

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// The checker on hand-made histories: a clean one passes, and each broken
// property is reported.
func TestCheckerProperties(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(tick, attempt, slot int, token int64, holder string, from, to int) cluster.Run {
		return cluster.Run{Job: "j", RunID: runs.ID("j", at(tick)), ScheduledAt: at(tick), Attempt: attempt, Slot: slot,
			Token: token, Holder: holder, Start: at(from), End: at(to), Status: 200}
	}
	clean := func() *History {
		return &History{
			Jobs:      []Job{{Name: "j", Every: time.Second, MaxConcurrency: 1}},
			Runs:      []cluster.Run{run(0, 1, 0, 10, "a", 0, 500), run(1000, 1, 0, 12, "b", 1000, 1500), run(2000, 1, 0, 14, "a", 2000, 2500)},
			Records:   map[string]runs.Record{},
			TicksFrom: t0, TicksUntil: at(2000), Healed: at(1500), Now: at(3000),
		}
	}
	tests := []struct {
		name   string
		breaks func(h *History)
		want   string // "" = no violation
	}{
		{"clean", func(*History) {}, ""},
		{"lost though its holder was dead at its instant", func(h *History) {
			h.Runs = h.Runs[:2]
			id := runs.ID("j", at(2000))
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 1, ScheduledAt: at(2000), Holder: "b.1f", Outcome: runs.Lost}
			h.Kills = []Kill{{Holder: "b", Window: Window{at(1800), at(2600)}}}
			h.Healed = at(900)
		}, "lost: j@"},
		{"a retry lost, claimed by its holder after it came back", func(h *History) {
			// Attempt 1 ran and was lost elsewhere; the retry, claimed later by
			// the restarted b, was lost in a later kill: its tick's time falls
			// in b's first window, its claim did not.
			h.Runs = h.Runs[:2]
			id := runs.ID("j", at(2000))
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 2, ScheduledAt: at(2000), Holder: "b.2f", Outcome: runs.Lost}
			h.Kills = []Kill{{Holder: "b", Window: Window{at(1800), at(2600)}}}
			h.Healed = at(900)
		}, ""},
		{"lost, claimed before its holder was killed", func(h *History) {
			h.Runs = h.Runs[:2]
			id := runs.ID("j", at(2000))
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 1, ScheduledAt: at(2000), Holder: "b.1f", Outcome: runs.Lost}
			h.Kills = []Kill{{Holder: "b", Window: Window{at(2000), at(2600)}}}
			h.Healed = at(900)
		}, ""},
		{"overlap", func(h *History) { h.Runs[1].Start = at(400) }, "overlap: job j had 2"},
		{"overlap fenced off", func(h *History) {
			h.Runs[0].End = at(1200)
			h.Runs[0].Superseded, h.Runs[0].SupersededAt = true, at(1000)
			h.Freezes = []Freeze{{Holder: "a", Window: Window{at(100), at(1300)}}}
		}, ""},
		{"superseded without a freeze", func(h *History) {
			h.Runs[0].End = at(1200)
			h.Runs[0].Superseded, h.Runs[0].SupersededAt = true, at(1000)
		}, "guard: run"},
		{"superseded after its holder ended it", func(h *History) {
			h.Runs[0].End, h.Runs[0].Cancelled = at(1040), true
			h.Runs[0].Superseded, h.Runs[0].SupersededAt = true, at(1000)
			h.Records[h.Runs[0].RunID] = runs.Record{RunID: h.Runs[0].RunID, Attempt: 1, Outcome: runs.Lost, EndedAt: at(990)}
		}, ""},
		{"superseded before its holder ended it", func(h *History) {
			h.Runs[0].End, h.Runs[0].Cancelled = at(1040), true
			h.Runs[0].Superseded, h.Runs[0].SupersededAt = true, at(1000)
			h.Records[h.Runs[0].RunID] = runs.Record{RunID: h.Runs[0].RunID, Attempt: 1, Outcome: runs.Lost, EndedAt: at(1010)}
		}, "guard: run"},
		{"superseded, ended first, but never cancelled at the target", func(h *History) {
			h.Runs[0].End = at(1200)
			h.Runs[0].Superseded, h.Runs[0].SupersededAt = true, at(1000)
			h.Records[h.Runs[0].RunID] = runs.Record{RunID: h.Runs[0].RunID, Attempt: 1, Outcome: runs.Lost, EndedAt: at(990)}
		}, "guard: run"},
		{"twice", func(h *History) { h.Runs[2] = run(1000, 1, 0, 14, "a", 2000, 2500) }, "twice:"},
		{"retry is not twice", func(h *History) {
			h.Runs[2] = run(1000, 2, 0, 14, "a", 2000, 2500)
			h.Records[runs.ID("j", at(2000))] = runs.Record{Outcome: runs.Missed}
		}, ""},
		{"an attempt recorded twice", func(h *History) {
			id := runs.ID("j", at(2000))
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 1, Outcome: runs.Failed, EndedAt: at(2500)}
			h.Writes = map[string]int64{id: 2}
		}, "recorded twice: j@"},
		{"each attempt recorded once", func(h *History) {
			id := runs.ID("j", at(2000))
			h.Records[id] = runs.Record{RunID: id, Job: "j", Attempt: 2, Outcome: runs.Failed, EndedAt: at(2500),
				Previous: []runs.Attempt{{Attempt: 1, Outcome: runs.Lost}}}
			h.Writes = map[string]int64{id: 2}
		}, ""},
		{"token goes back", func(h *History) { h.Runs[2].Token = 11 }, "tokens: j/0 accepted token 11"},
		{"a strict retry on its kept slot carries its token again", func(h *History) {
			h.Runs = slices.Insert(h.Runs, 2, run(1000, 2, 0, 12, "b", 1600, 1900))
		}, ""},
		{"another run with the token before", func(h *History) { h.Runs[2].Token = 12 }, "tokens: j/0 accepted token 12 after 12"},
		{"tick lost", func(h *History) { h.Runs = h.Runs[:2]; h.Healed = at(900) }, "ticks: j@"},
		{"tick lost in a failover window", func(h *History) {
			h.Runs = h.Runs[:2]
			h.Healed = at(900)
			h.Failover = []Window{{at(1800), at(2200)}}
		}, ""},
		{"tick recorded", func(h *History) {
			h.Runs = h.Runs[:2]
			h.Healed = at(900)
			h.Records[runs.ID("j", at(2000))] = runs.Record{Outcome: runs.Skipped}
		}, ""},
		{"run while etcd down", func(h *History) {
			h.EtcdDown = []Window{{at(1500), at(3000)}}
			h.RunStartGrace = 200 * time.Millisecond
		}, "etcd down:"},
		{"no run after heal", func(h *History) { h.Healed = at(2900) }, "healed: job j"},
		{"phantom success", func(h *History) {
			h.Records[h.Runs[0].RunID] = runs.Record{RunID: h.Runs[0].RunID, Job: "j", Attempt: 2, Outcome: runs.Succeeded}
		}, "records:"},
		{"rate window exceeded", func(h *History) {
			h.Jobs[0].Resources = []string{"metered"}
			h.Rates = map[string]Rate{"metered": {Count: 2, Per: 3 * time.Second}}
		}, "rate: resource metered had 3 starts"},
		{"rate window kept", func(h *History) {
			h.Jobs[0].Resources = []string{"metered"}
			h.Rates = map[string]Rate{"metered": {Count: 3, Per: 2 * time.Second}}
		}, ""},
		{"key overlap", func(h *History) {
			h.Jobs[0].Keyed = true
			h.Runs[1].Start = at(400)
			for _, run := range h.Runs {
				h.Records[run.RunID] = runs.Record{RunID: run.RunID, Outcome: runs.Succeeded, ConcurrencyKey: "c-1"}
			}
		}, `key: job j key "c-1" had 2`},
		{"too many slot keys", func(h *History) { h.SlotPeaks = map[string]cluster.SlotPeak{cluster.SlotGroup(false, "j"): {Count: 2}} }, "slots: job j had 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := clean()
			tt.breaks(h)
			wantViolation(t, Check(h).Violations, "", tt.want)
		})
	}
}

// wantViolation checks the violations that start with prefix (every one
// when prefix is empty): none when want is empty, else one containing want.
func wantViolation(t *testing.T, violations []string, prefix, want string) {
	t.Helper()
	var got []string
	for _, v := range violations {
		if strings.HasPrefix(v, prefix) {
			got = append(got, v)
		}
	}
	joined := strings.Join(got, "\n")
	if want == "" && len(got) > 0 {
		t.Fatalf("unexpected violations:\n%s", joined)
	}
	if want != "" && !strings.Contains(joined, want) {
		t.Fatalf("want a violation containing %q, got:\n%s\n(all: %q)", want, joined, violations)
	}
}
