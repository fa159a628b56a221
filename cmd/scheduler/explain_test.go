package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// settlementJobs is the job of docs/schedules.md: weekdays at 18:00 and
// Saturdays at 12:00, not on holidays, not on Fridays, not in the
// year-end freeze.
const settlementJobs = `cluster:
  etcd:
    endpoints: ["http://127.0.0.1:2379"]
calendars:
  - name: holidays-de
    dates: [2026-12-24, 2026-12-25, 2026-12-26, 2027-01-01]
jobs:
  - name: settlement
    schedules: ["0 18 * * 1-5", "0 12 * * 6"]
    timezone: Europe/Berlin
    exclude:
      - calendar: holidays-de
      - cron: "* * * * 5"
      - {from: "2026-12-28T00:00:00+01:00", to: "2027-01-02T00:00:00+01:00"}
    exec: {command: ["true"]}
`

// `next` shows only the ticks that fire; `next --explain` lists the
// excluded ones between them, each with the rule that excluded it.
func TestNextExplain(t *testing.T) {
	path := writeFile(t, settlementJobs)
	now := at(t, "2026-12-22T19:00:00+01:00")

	out, errOut, code := nextAt(t, now, "--config", path, "-n", "3", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var plain nextJSON
	if err := json.Unmarshal([]byte(out), &plain); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range plain[0].Fires {
		got = append(got, f.ScheduledAt)
	}
	want := []string{"2026-12-23T18:00:00+01:00", "2027-01-02T12:00:00+01:00", "2027-01-04T18:00:00+01:00"}
	if !slices.Equal(got, want) {
		t.Errorf("next: got %q, want %q", got, want)
	}

	out, errOut, code = nextAt(t, now, "--config", path, "-n", "2", "--explain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	wantRows := []string{
		"JOB         SCHEDULED AT (JOB TIME)         SCHEDULED AT (UTC)    EXCLUDED BY",
		"settlement  2026-12-23 18:00:00 +01:00 CET  2026-12-23T17:00:00Z  -",
		`settlement  2026-12-24 18:00:00 +01:00 CET  2026-12-24T17:00:00Z  calendar "holidays-de"`,
		`settlement  2026-12-25 18:00:00 +01:00 CET  2026-12-25T17:00:00Z  calendar "holidays-de"`,
		`settlement  2026-12-26 12:00:00 +01:00 CET  2026-12-26T11:00:00Z  calendar "holidays-de"`,
		"settlement  2026-12-28 18:00:00 +01:00 CET  2026-12-28T17:00:00Z  from 2026-12-28T00:00:00+01:00 to 2027-01-02T00:00:00+01:00",
		"settlement  2026-12-29 18:00:00 +01:00 CET  2026-12-29T17:00:00Z  from 2026-12-28T00:00:00+01:00 to 2027-01-02T00:00:00+01:00",
		"settlement  2026-12-30 18:00:00 +01:00 CET  2026-12-30T17:00:00Z  from 2026-12-28T00:00:00+01:00 to 2027-01-02T00:00:00+01:00",
		"settlement  2026-12-31 18:00:00 +01:00 CET  2026-12-31T17:00:00Z  from 2026-12-28T00:00:00+01:00 to 2027-01-02T00:00:00+01:00",
		`settlement  2027-01-01 18:00:00 +01:00 CET  2027-01-01T17:00:00Z  calendar "holidays-de"`,
		"settlement  2027-01-02 12:00:00 +01:00 CET  2027-01-02T11:00:00Z  -",
	}
	for i := range max(len(rows), len(wantRows)) {
		var g, w string
		if i < len(rows) {
			g = strings.TrimRight(rows[i], " ")
		}
		if i < len(wantRows) {
			w = wantRows[i]
		}
		if g != w {
			t.Errorf("row %d:\n got %q\nwant %q", i, g, w)
		}
	}

	out, _, _ = nextAt(t, now, "--config", path, "-n", "2", "--explain", "-o", "json")
	if !strings.Contains(out, `"excluded_by": "calendar \"holidays-de\""`) {
		t.Errorf("json lacks excluded_by:\n%s", out)
	}
}

// `next --explain --until` lists every tick up to the time, the excluded
// ones with their rule, as the README's synopsis shows them together
// (issue 34, item 6: "--explain counts fire times with -n").
func TestNextExplainUntil(t *testing.T) {
	path := writeFile(t, settlementJobs)
	now := at(t, "2026-12-22T19:00:00+01:00")
	out, errOut, code := nextAt(t, now, "--config", path, "--until", "2026-12-26T23:00:00+01:00", "--explain", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var fires []jobFires
	if err := json.Unmarshal([]byte(out), &fires); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fires[0].Fires {
		got = append(got, f.ScheduledAt.Format(time.RFC3339)+" "+f.ExcludedBy)
	}
	want := []string{"2026-12-23T18:00:00+01:00 ", `2026-12-24T18:00:00+01:00 calendar "holidays-de"`,
		`2026-12-25T18:00:00+01:00 calendar "holidays-de"`, `2026-12-26T12:00:00+01:00 calendar "holidays-de"`}
	if !slices.Equal(got, want) {
		t.Errorf("next --explain --until:\n got %q\nwant %q", got, want)
	}
}
