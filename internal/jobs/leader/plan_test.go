package leader

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
)

func tickJob(schedule, catchUp string, deadline time.Duration) *config.Job {
	return &config.Job{
		Name:             "j",
		Schedule:         schedule,
		Timezone:         "UTC",
		CatchUp:          catchUp,
		StartingDeadline: config.Duration(deadline),
	}
}

func count(p plan, a tickAction) int {
	n := 0
	for _, t := range p.Ticks {
		if t.Action == a {
			n++
		}
	}
	return n
}

func TestPlanTicks(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 300_000_000, time.UTC) // 12:00:00.3
	sec := time.Second
	for _, tc := range []struct {
		name        string
		job         *config.Job
		cursor      time.Time
		lookahead   time.Duration
		queued      int
		missed      int
		dropped     int
		firstQueued time.Time
		lastCursor  time.Time
	}{
		{
			name: "steady state: next ticks ahead of time", job: tickJob("@every 1s", "latest", time.Minute),
			cursor: now.Add(-300 * time.Millisecond), lookahead: 2 * sec,
			queued: 2, firstQueued: now.Add(700 * time.Millisecond), lastCursor: now.Add(1700 * time.Millisecond),
		},
		{
			name: "new job starts at its next tick", job: tickJob("@every 1s", "all", time.Minute),
			cursor: time.Time{}, lookahead: 0, queued: 0, lastCursor: now,
		},
		{
			name: "a tick just due is on time, not late", job: tickJob("@every 1s", "none", time.Minute),
			cursor: now.Add(-1300 * time.Millisecond), lookahead: 0,
			queued: 1, firstQueued: now.Add(-300 * time.Millisecond), lastCursor: now.Add(-300 * time.Millisecond),
		},
		{
			name: "30s gap, catch_up latest: newest late tick runs", job: tickJob("@every 1s", "latest", time.Minute),
			cursor: now.Add(-30*sec - 300*time.Millisecond), lookahead: 0,
			// ticks 11:59:31..12:00:00: 29 late (age > 1s), 1 on time
			queued: 2, missed: 28, firstQueued: now.Add(-1*sec - 300*time.Millisecond), lastCursor: now.Add(-300 * time.Millisecond),
		},
		{
			name: "30s gap, catch_up all: every late tick runs", job: tickJob("@every 1s", "all", time.Minute),
			cursor: now.Add(-30*sec - 300*time.Millisecond), lookahead: 0,
			queued: 30, firstQueued: now.Add(-29*sec - 300*time.Millisecond), lastCursor: now.Add(-300 * time.Millisecond),
		},
		{
			name: "30s gap, catch_up none: late ticks missed", job: tickJob("@every 1s", "none", time.Minute),
			cursor: now.Add(-30*sec - 300*time.Millisecond), lookahead: 0,
			queued: 1, missed: 29, firstQueued: now.Add(-300 * time.Millisecond), lastCursor: now.Add(-300 * time.Millisecond),
		},
		{
			name: "past the starting deadline: missed whatever the policy", job: tickJob("@every 1s", "all", 10*sec),
			cursor: now.Add(-30*sec - 300*time.Millisecond), lookahead: 0,
			// 20 ticks older than 10s are missed; 9 late ones and the current run
			queued: 10, missed: 20, firstQueued: now.Add(-9*sec - 300*time.Millisecond), lastCursor: now.Add(-300 * time.Millisecond),
		},
		{
			name: "catch-up capped at 100 runs", job: tickJob("@every 1s", "all", time.Hour),
			cursor: now.Add(-10*time.Minute - 300*time.Millisecond), lookahead: 0,
			// 600 ticks: 599 late, newest 100 of them run plus the current one; 499 missed
			queued: 101, missed: 100, dropped: 399, lastCursor: now.Add(-300 * time.Millisecond),
			firstQueued: now.Add(-100*sec - 300*time.Millisecond),
		},
		{
			name: "a day away with a 100ms job: bounded work, jump to the deadline", job: tickJob("@every 100ms", "latest", time.Minute),
			cursor: now.Add(-24 * time.Hour), lookahead: 0,
			// on time: 12:00:00.2 and .3 (the next tick is not due yet);
			// latest late: 12:00:00.1.
			queued: 3, missed: 100, dropped: -1, lastCursor: now,
			firstQueued: now.Add(-200 * time.Millisecond),
		},
		{
			name: "hourly cron after a 3h gap, latest", job: tickJob("0 * * * *", "latest", 2*time.Hour),
			cursor: now.Add(-3*time.Hour - 300*time.Millisecond), lookahead: 0,
			// 10:00 is past the deadline; 11:00 is late and runs; 12:00 is on time.
			queued: 2, missed: 1, firstQueued: time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC), lastCursor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := tc.job.ParsedSchedule()
			if err != nil {
				t.Fatal(err)
			}
			p := planTicks(tc.job, sched, tc.cursor, now, tc.lookahead)
			if got := count(p, queueTick); got != tc.queued {
				t.Errorf("queued %d, want %d", got, tc.queued)
			}
			if got := count(p, missTick); got != tc.missed {
				t.Errorf("missed %d, want %d", got, tc.missed)
			}
			if tc.dropped >= 0 && p.Dropped != tc.dropped {
				t.Errorf("dropped %d, want %d", p.Dropped, tc.dropped)
			}
			if tc.dropped < 0 && p.Dropped == 0 {
				t.Error("dropped 0, want some")
			}
			if !p.Cursor.Equal(tc.lastCursor) {
				t.Errorf("cursor %s, want %s", p.Cursor, tc.lastCursor)
			}
			for i, pt := range p.Ticks {
				if i > 0 && !pt.At.After(p.Ticks[i-1].At) {
					t.Fatalf("ticks out of order at %d: %s after %s", i, pt.At, p.Ticks[i-1].At)
				}
				if pt.Action == queueTick && !pt.At.Equal(tc.firstQueued) && i == 0 {
					t.Errorf("first queued %s, want %s", pt.At, tc.firstQueued)
				}
			}
			for _, pt := range p.Ticks {
				if pt.Action == queueTick {
					if !pt.At.Equal(tc.firstQueued) {
						t.Errorf("first queued %s, want %s", pt.At, tc.firstQueued)
					}
					break
				}
			}
		})
	}
}

// Jitter moves a tick's start but never its id, and every leader computes
// the same delay.
func TestPlanTicksJitterIsDeterministic(t *testing.T) {
	job := tickJob("@every 10s", "latest", time.Minute)
	job.Jitter = config.Duration(5 * time.Second)
	sched, err := job.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	a := planTicks(job, sched, now, now, time.Minute)
	b := planTicks(job, sched, now, now, time.Minute)
	if len(a.Ticks) != 6 {
		t.Fatalf("%d ticks, want 6", len(a.Ticks))
	}
	differs := false
	for i := range a.Ticks {
		if a.Ticks[i] != b.Ticks[i] {
			t.Fatalf("tick %d differs between two leaders: %+v vs %+v", i, a.Ticks[i], b.Ticks[i])
		}
		d := a.Ticks[i].NotBefore.Sub(a.Ticks[i].At)
		if d < 0 || d >= 5*time.Second {
			t.Errorf("jitter %s outside [0, 5s)", d)
		}
		if d != 0 {
			differs = true
		}
	}
	if !differs {
		t.Error("no tick was jittered")
	}
}
