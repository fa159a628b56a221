package config

import (
	"encoding/json"
	"testing"
	"time"
)

const settlementYAML = `
calendars:
  - name: holidays-de
    dates: [2026-12-24, 2026-12-25]
jobs:
  - name: settlement
    schedules: ["0 18 * * 1-5", "0 12 * * 6"]
    timezone: Europe/Berlin
    exclude:
      - calendar: holidays-de
      - {from: "2026-12-28T00:00:00+01:00", to: "2027-01-02T00:00:00+01:00"}
    start_at: "2026-12-01T00:00:00+01:00"
    exec: {command: [date]}
`

// TestParsedScheduleIsTheUnion: what the leader, the worker and the API ask
// for is the union after exclusions, and a job decoded from a queue entry
// (JSON, without the calendars) computes the same ticks.
func TestParsedScheduleIsTheUnion(t *testing.T) {
	cfg, err := Parse("settlement.yaml", []byte(settlementYAML))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.Job("settlement"))
	if err != nil {
		t.Fatal(err)
	}
	var travelled Job
	if err := json.Unmarshal(b, &travelled); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2026-12-01T18:00:00+01:00", // start_at: nothing in November
		"2026-12-23T18:00:00+01:00",
		"2026-12-26T12:00:00+01:00",
		"2027-01-02T12:00:00+01:00",
	}
	for name, j := range map[string]*Job{"loaded": cfg.Job("settlement"), "from JSON": &travelled} {
		sched, err := j.ParsedSchedule()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		from := []time.Time{
			time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 12, 23, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC),
		}
		for i, f := range from {
			if got := sched.Next(f).In(j.Location()).Format(time.RFC3339); got != want[i] {
				t.Errorf("%s: Next(%s) = %s, want %s", name, f.Format(time.RFC3339), got, want[i])
			}
		}
	}
}

// TestHashCoversSchedules: a replica with another calendar or exclusion
// list must show as drift.
func TestHashCoversSchedules(t *testing.T) {
	base, err := Parse("a.yaml", []byte(settlementYAML))
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(c *Config){
		"calendar date": func(c *Config) { c.Calendars[0].Dates[1] = "2026-12-26" },
		"schedules":     func(c *Config) { c.Jobs[0].Schedules[1] = "0 13 * * 6" },
		"exclude":       func(c *Config) { c.Jobs[0].Exclude[1].To = "2027-01-03T00:00:00+01:00" },
		"start_at":      func(c *Config) { c.Jobs[0].StartAt = "2026-12-02T00:00:00+01:00" },
		"end_at":        func(c *Config) { c.Jobs[0].EndAt = "2027-12-02T00:00:00+01:00" },
	}
	for name, edit := range edits {
		c, err := Parse("a.yaml", []byte(settlementYAML))
		if err != nil {
			t.Fatal(err)
		}
		edit(c)
		if c.Hash() == base.Hash() {
			t.Errorf("%s: hash unchanged", name)
		}
	}
}

// A config built in code gets the same checks and calendar dates as one
// read from a file; a job that only runs when triggered is not refused
// for never firing.
func TestValidateResolvesCalendars(t *testing.T) {
	cfg, err := Parse("a.yaml", []byte(settlementYAML))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Jobs[0].Exclude[0].Dates = nil
	manual := cfg.Jobs[0]
	manual.Name, manual.Schedules, manual.Schedule = "manual", nil, " @manually "
	cfg.Jobs = append(cfg.Jobs, manual)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.Jobs[0].Exclude[0].Dates; len(got) != 2 || got[0] != "2026-12-24" {
		t.Errorf("calendar dates in the job: %q", got)
	}
}
