package fault

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The chain and notification checks on hand-made records: a clean history
// passes, and a missing or foreign downstream run and a lost notification
// are each reported.
func TestCheckerChainsAndNotifications(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up1, up2 := runs.ID("up", t0), runs.ID("up", t0.Add(time.Second))
	down1 := runs.ChainID("down", up1)
	clean := func() *History {
		return &History{
			Records: map[string]runs.Record{
				up1:   {RunID: up1, Job: "up", Attempt: 1, Outcome: runs.Succeeded},
				up2:   {RunID: up2, Job: "up", Attempt: 2, Outcome: runs.Failed},
				down1: {RunID: down1, Job: "down", Attempt: 1, Trigger: runs.Chain, UpstreamRunID: up1, Outcome: runs.Succeeded},
			},
			Chains: []Chain{{Up: "up", Down: "down", On: []runs.Outcome{runs.Succeeded}}},
			Notify: Notify{Job: "up", Events: []runs.Outcome{runs.Failed}, Seen: map[string]bool{notify.ID(up2, 2, "failed"): true}},
		}
	}
	tests := []struct {
		name   string
		breaks func(h *History)
		want   string
	}{
		{"clean", func(*History) {}, ""},
		{"downstream missing", func(h *History) { delete(h.Records, down1) }, "chain: " + up1 + " ended succeeded"},
		{"downstream still queued", func(h *History) { h.Records[down1] = runs.Record{RunID: down1, Outcome: "queued"} }, ""},
		{"downstream without its upstream", func(h *History) {
			id := runs.ChainID("down", up2)
			h.Records[id] = runs.Record{RunID: id, Job: "down", Trigger: runs.Chain, UpstreamRunID: up2}
		}, "chain: down@chain-" + up2 + " names upstream"},
		{"notification lost", func(h *History) { h.Notify.Seen = nil }, "notifications: " + up2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := clean()
			tt.breaks(h)
			r := &Report{}
			checkChains(h, r)
			checkNotifications(h, r)
			wantViolation(t, r.Violations, "", tt.want)
		})
	}
}
