package fault

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

var tickT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tickAt is the due time of tick i of tickHistory's job.
func tickAt(i int) time.Time { return tickT0.Add(time.Duration(i) * time.Second) }

// tickHistory: job j @every 1s, starting_deadline 2s, session_ttl 1s (G2's
// bound 8s), each of its ticks 1..19 run 100ms after it was due; the
// checker ends at 20s, so G2 looks at ticks 1..12.
func tickHistory() *History {
	h := &History{
		Jobs:       []Job{{Name: "j", Every: time.Second, MaxConcurrency: 1, StartingDeadline: 2 * time.Second}},
		Records:    map[string]runs.Record{},
		RecordedAt: map[string]time.Time{},
		SessionTTL: time.Second,
		TicksFrom:  tickT0, TicksUntil: tickAt(15), Healed: tickAt(1), Now: tickAt(20),
	}
	for i := 1; i < 20; i++ {
		h.Runs = append(h.Runs, cluster.Run{Job: "j", RunID: runs.ID("j", tickAt(i)), ScheduledAt: tickAt(i), Attempt: 1,
			Token: int64(10 + i), Holder: "a", Start: tickAt(i).Add(100 * time.Millisecond), End: tickAt(i).Add(500 * time.Millisecond), Status: 200})
	}
	return h
}

// dropRun removes tick i's run from h.
func dropRun(h *History, i int) {
	h.Runs = slices.DeleteFunc(h.Runs, func(r cluster.Run) bool { return r.ScheduledAt.Equal(tickAt(i)) })
}

// G2 on fixed observations: a tick neither run nor recorded in time is
// reported, whatever else happened around it.
func TestCheckerAccountsForEveryTick(t *testing.T) {
	id5 := runs.ID("j", tickAt(5))
	recorded := func(h *History, o runs.Outcome, after time.Duration) {
		dropRun(h, 5)
		h.Records[id5] = runs.Record{RunID: id5, Job: "j", Attempt: 1, ScheduledAt: tickAt(5), Outcome: o}
		h.RecordedAt[id5] = tickAt(5).Add(after)
	}
	tests := []struct {
		name   string
		breaks func(h *History)
		want   string // "" = no G2 violation
	}{
		{"every tick ran", func(*History) {}, ""},
		{"tick neither ran nor was recorded", func(h *History) { dropRun(h, 5) }, "accounted: " + id5 + " (due 00:00:05.000) neither"},
		{"tick lost inside a failover window", func(h *History) {
			dropRun(h, 5)
			h.Failover = []Window{{tickAt(4), tickAt(7)}}
		}, "accounted: " + id5},
		{"tick recorded missed in time", func(h *History) { recorded(h, runs.Missed, 3*time.Second) }, ""},
		{"tick recorded skipped too late", func(h *History) { recorded(h, runs.Skipped, 9*time.Second) },
			"accounted: " + id5 + " (due 00:00:05.000) was first recorded skipped 9s after it was due; want within 8s"},
		{"tick still queued at the end", func(h *History) {
			recorded(h, queuedOutcome, 0)
			delete(h.RecordedAt, id5)
		}, "still queued at the end"},
		{"tick started too late", func(h *History) {
			h.Runs[4].Start, h.Runs[4].End = tickAt(14), tickAt(14).Add(100*time.Millisecond)
			h.Runs[4], h.Runs[13] = h.Runs[13], h.Runs[4]
		}, "was first started 9s after"},
		{"tick past the checked range", func(h *History) { dropRun(h, 17) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tickHistory()
			tt.breaks(h)
			rep := Check(h)
			if rep.TicksAccounted != 12 {
				t.Errorf("G2 checked %d ticks; want 12 (1s..12s)", rep.TicksAccounted)
			}
			wantViolation(t, rep.Violations, "accounted:", tt.want)
		})
	}
}

// G1 after its record: an attempt that reaches the target after etcd
// recorded its end is reported.
func TestCheckerRunAfterItsRecord(t *testing.T) {
	id3 := runs.ID("j", tickAt(3))
	start3 := tickAt(3).Add(100 * time.Millisecond)
	tests := []struct {
		name string
		rec  runs.Record
		seen time.Duration // when the watch saw the record written, after tick 3
		want string
	}{
		{"recorded after it ended", runs.Record{Attempt: 1, Outcome: runs.Succeeded, EndedAt: start3.Add(time.Second)}, 0, ""},
		{"recorded skipped, then ran", runs.Record{Attempt: 1, Outcome: runs.Skipped, EndedAt: start3.Add(-time.Second)}, 0,
			"after record: " + id3 + "#1 started on a at 00:00:03.100 (token 13), 1s after its attempt was recorded skipped"},
		{"recorded missed (no ended_at), then ran", runs.Record{Attempt: 1, Outcome: runs.Missed}, -time.Second,
			"after record: " + id3 + "#1"},
		{"an earlier attempt recorded lost, then ran again", runs.Record{Attempt: 2, Outcome: runs.Failed, EndedAt: start3.Add(3 * time.Second),
			Previous: []runs.Attempt{{Attempt: 1, Outcome: runs.Lost, EndedAt: start3.Add(-2 * time.Second)}}}, 0,
			"recorded lost"},
		{"within the cancel notice", runs.Record{Attempt: 1, Outcome: runs.Lost, EndedAt: start3.Add(-cancelNotice / 2)}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tickHistory()
			tt.rec.RunID, tt.rec.Job, tt.rec.ScheduledAt = id3, "j", tickAt(3)
			h.Records[id3] = tt.rec
			h.RecordedAt[id3] = tickAt(3).Add(tt.seen)
			wantViolation(t, Check(h).Violations, "after record:", tt.want)
		})
	}
}
