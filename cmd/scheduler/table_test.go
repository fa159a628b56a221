package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// The elastic column is cut so each line fits the width; with no width
// (-o wide) nothing is cut; ids are never cut, even when they alone are
// wider than the terminal.
func TestTableFitsWidth(t *testing.T) {
	build := func(width int) string {
		tb := newTable(view{width: width}, "RUN ID", "OUTCOME", "ERROR").shrink(2)
		tb.add("nightly@2026-03-29T01:30:00Z", "failed", "exit status 3: "+strings.Repeat("x", 100)+"\nsecond line")
		tb.add("nightly@2026-03-30T01:30:00Z", "succeeded", "")
		var b bytes.Buffer
		if err := tb.write(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	wide := build(0)
	if !strings.Contains(wide, strings.Repeat("x", 100)+" second line") || strings.Count(wide, "\n") != 3 {
		t.Errorf("no width: want every character, one line a row:\n%s", wide)
	}
	for _, line := range strings.Split(strings.TrimSpace(build(80)), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > 80 {
			t.Errorf("line of %d characters on an 80-column terminal: %q", n, line)
		}
	}
	narrow := build(20)
	if !strings.Contains(narrow, "nightly@2026-03-29T01:30:00Z") || !strings.Contains(narrow, "exit status…") {
		t.Errorf("20 columns: ids whole, the error cut to %d:\n%s", minElastic, narrow)
	}
}

// Every table of the client, filled with realistic long names and ids (a
// Kubernetes pod as holder, a manual run's ULID id, a keyed job, a
// resource slot, a long error), fits 100 columns by default, on a pipe as
// on a terminal; -o wide shows every column and cuts nothing.
func TestTablesFit100Columns(t *testing.T) {
	at := time.Date(2026, 11, 25, 16, 4, 5, 0, time.UTC)
	exit := 3
	job := "customer-invoice-sync"
	manual := job + "@manual-01JDQ5R2X8N9YV7M4K3T6W1PZB"
	holder := "scheduler-7d9f8b6c5-x2k4q"
	longErr := `target: POST "https://billing.internal.example.com/v1/invoices/sync": dial tcp 10.0.3.17:443: connection refused`
	jobs := []client.Job{{Job: wire.Job{Name: job, Team: "payments", Spec: config.Job{Schedule: "*/15 8-18 * * MON-FRI", Timezone: "America/Los_Angeles",
		HTTP: &config.HTTP{}, ConcurrencyKey: "{{ .Input.customer_id }}"}, NextRun: at, Running: 10, MaxConcurrency: 1,
		Pending: 120, Scheduled: 3, LastRun: &runs.Record{Outcome: "interrupted", ScheduledAt: at}}}}
	runList := []client.Run{recordRun(runs.Record{RunID: manual, Team: "payments", Trigger: "manual", ScheduledAt: at, StartedAt: at, EndedAt: at.Add(83*time.Minute + 4567*time.Millisecond),
		Outcome: "interrupted", ExitCode: &exit, Holder: holder, Error: longErr, Input: json.RawMessage(`{"customer_id":"c-100234","region":"eu-west-1"}`)})}
	held := []client.Slot{
		{Slot: wire.Slot{Job: job, ConcurrencyKey: "c-100234", RunID: manual, Holder: holder, FencingToken: 1234567, StartedAt: at, ScheduledAt: at}},
		{Slot: wire.Slot{Resource: "warehouse-db", Slot: 12, RunID: manual, Holder: holder, FencingToken: 1234568, StartedAt: at, ScheduledAt: at}}}
	windows := []client.Slot{{Slot: wire.Slot{Window: &wire.Window{Window: "resource/warehouse-db", Count: 100, Per: "1h", InUse: 100, Oldest: at}}}}
	members := []client.Member{{Member: wire.Member{ID: holder, APIAddr: "10.244.12.137:8080", Version: "v0.0.0-20261125155934-217588b7e3a1",
		ConfigHash: "3fa9c2d17b40", StartedAt: at, IsLeader: true}}}
	fires := []jobFires{{Job: job, Schedule: "0 * * * *", Timezone: "America/Los_Angeles", Jitter: "10m0s",
		Fires: []fire{{ScheduledAt: at.In(time.FixedZone("PST", -8*3600)), ScheduledAtUTC: at, DueAt: at.Add(9*time.Minute + 59999*time.Millisecond)}}}}
	tables := map[string]func(v view) *table{
		"jobs":          func(v view) *table { return jobsTable(v, jobs) },
		"runs":          func(v view) *table { return runTable(v, runList) },
		"slots":         func(v view) *table { return heldTable(v, held) },
		"slots windows": func(v view) *table { return windowsTable(v, windows) },
		"members":       func(v view) *table { return membersTable(v, members) },
		"leader": func(v view) *table {
			return leaderTable(v, client.Leader{Leader: wire.Leader{ID: holder, APIAddr: "10.244.12.137:8080", Since: at, Revision: 123456789}})
		},
		"next": func(v view) *table { return nextTable(fires, v) },
	}
	for name, build := range tables {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := build(viewOf(&b, false)).write(&b); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > defaultWidth {
					t.Errorf("%d columns, want at most %d:\n%s", n, defaultWidth, b.String())
				}
			}
			wide := build(view{wide: true})
			var w bytes.Buffer
			if err := wide.write(&w); err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(w.String(), "\n")[0]; len(strings.Fields(got)) < len(strings.Fields(strings.Split(b.String(), "\n")[0])) ||
				strings.Contains(w.String(), "…") {
				t.Errorf("-o wide: want every column, nothing cut:\n%s", w.String())
			}
		})
	}
}

// A paused job's long reason does not cut the NEXT RUN times: the column
// says "paused" and the until, the reason waits for -o wide, which shows
// it whole (issue 34, item 5: every NEXT RUN read "2026-11-28T07:07:0…").
func TestJobsTableNeverCutsTimes(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 7, 0, 0, time.UTC)
	until := at.Add(3 * time.Hour)
	jobs := []client.Job{
		{Job: wire.Job{Name: "customer-invoice-sync", Spec: config.Job{Schedule: "*/15 8-18 * * MON-FRI"}, NextRun: at, MaxConcurrency: 1}},
		{Job: wire.Job{Name: "warehouse-export", Spec: config.Job{Schedule: "0 2 * * *"}, Paused: true, PausedUntil: until, NextRun: until, MaxConcurrency: 1,
			PauseReason: "vendor API maintenance window announced in ticket OPS-4521, resume after their all-clear"}},
	}
	var b bytes.Buffer
	if err := jobsTable(view{width: defaultWidth}, jobs).write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{stamp(at) + " ", "paused until " + stamp(until) + " "} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); n > defaultWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	b.Reset()
	if err := jobsTable(view{wide: true}, jobs).write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), jobs[1].PauseReason) {
		t.Errorf("-o wide without the whole reason:\n%s", b.String())
	}
}

// A run's team shows after its id while the row has room (docs/operations.md,
// "Reading history"); a run id too long for both keeps its whole id and the
// team waits for -o wide, where "-" marks a job of the main file.
func TestRunsTableTeam(t *testing.T) {
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	headerOf := func(v view, list ...runs.Record) []string {
		var rs []client.Run
		for _, r := range list {
			rs = append(rs, recordRun(r))
		}
		var b bytes.Buffer
		if err := runTable(v, rs).write(&b); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if n := utf8.RuneCountInString(strings.TrimRight(l, " ")); v.width > 0 && n > v.width {
				t.Errorf("line of %d columns: %q", n, l)
			}
		}
		return strings.Fields(strings.Split(b.String(), "\n")[0])
	}
	settle := runs.Record{RunID: "settle@" + stamp(at), Team: "payments", Outcome: "failed", StartedAt: at, EndedAt: at.Add(time.Second),
		Error: "target: POST http://payments/settle: 503 Service Unavailable, retried twice"}
	if h := headerOf(view{width: defaultWidth}, settle); len(h) < 3 || h[2] != "TEAM" {
		t.Errorf("header %q: want TEAM after RUN ID", h)
	}
	long := settle
	long.RunID, long.Outcome = "customer-invoice-sync@manual-01JDQ5R2X8N9YV7M4K3T6W1PZB", "interrupted"
	long.EndedAt = at.Add(83*time.Minute + 4567*time.Millisecond)
	if h := headerOf(view{width: defaultWidth}, long); slices.Contains(h, "TEAM") {
		t.Errorf("header %q: want no TEAM where it would push the row past %d columns", h, defaultWidth)
	}
	if h := headerOf(view{wide: true}, long); len(h) < 3 || h[2] != "TEAM" {
		t.Errorf("-o wide: header %q, want TEAM after RUN ID", h)
	}
	main := settle
	main.Team = ""
	if h := headerOf(view{width: defaultWidth}, main); slices.Contains(h, "TEAM") {
		t.Errorf("header %q: want no TEAM when no listed run has one", h)
	}
}

// An overdue job is marked in the LAST column, whatever its last run.
func TestJobsTableMarksOverdue(t *testing.T) {
	jobs := []client.Job{
		{Job: wire.Job{Name: "backup", Spec: config.Job{Schedule: "0 2 * * *"}, MaxConcurrency: 1, Overdue: true,
			LastRun: &runs.Record{Outcome: runs.Failed}}},
		{Job: wire.Job{Name: "report", Spec: config.Job{Schedule: "0 3 * * *"}, MaxConcurrency: 1,
			LastRun: &runs.Record{Outcome: runs.Failed}}},
	}
	var b bytes.Buffer
	if err := jobsTable(view{width: defaultWidth}, jobs).write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], "failed OVERDUE") || strings.Contains(lines[2], "OVERDUE") {
		t.Errorf("want backup marked OVERDUE, report not:\n%s", b.String())
	}
}
