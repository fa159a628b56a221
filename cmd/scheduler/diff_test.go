package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// diffBase is the config each case of TestDiffTable changes.
const diffBase = `jobs:
  - name: report
    schedule: "0 2 * * *"
    http:
      url: http://reports/run
      headers_file: report-headers.yaml
`

// diffNow starts the window of the diff tests: a Saturday.
var diffNow = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// runDiff writes old and cur (and each file of extra) in a directory and
// runs scheduler diff --config cur --against old.
func runDiff(t *testing.T, old, cur string, extra map[string][2]string, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	write := func(sub, name, content string) {
		p := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old", "config.yaml", old)
	write("new", "config.yaml", cur)
	for name, both := range extra {
		write("old", name, both[0])
		write("new", name, both[1])
	}
	var stdout, stderr bytes.Buffer
	args = append([]string{"--config", filepath.Join(dir, "new", "config.yaml"), "--against", filepath.Join(dir, "old", "config.yaml")}, args...)
	code := diffCommand(context.Background(), args, &stdout, &stderr, diffNow)
	return stdout.String(), stderr.String(), code
}

// sameHeaders is the report's secret, unchanged.
var sameHeaders = map[string][2]string{"report-headers.yaml": {"Authorization: Bearer s3cret-one\n", "Authorization: Bearer s3cret-one\n"}}

func TestDiffTable(t *testing.T) {
	for _, tc := range []struct {
		name, cur string
		headers   map[string][2]string
		want      string
		code      int
	}{
		{name: "none", cur: diffBase, want: `no differences
`, code: exitOK},
		{name: "add", cur: diffBase + `  - name: cleanup
    schedule: "0 12 * * *"
    exec: {command: [/bin/true]}
`, want: `job cleanup: added
  ticks in the next 48h: 2 appear
    appear    2026-11-28T12:00:00Z
    appear    2026-11-29T12:00:00Z
differences: jobs 1 added
`, code: exitDiffers},
		{name: "remove", cur: "jobs: []\n", want: `job report: removed
  ticks in the next 48h: 2 disappear
    disappear 2026-11-28T02:00:00Z
    disappear 2026-11-29T02:00:00Z
differences: jobs 1 removed
`, code: exitDiffers},
		{name: "rename", cur: strings.Replace(diffBase, "name: report", "name: report-v2", 1), want: `job report: removed
  ticks in the next 48h: 2 disappear
    disappear 2026-11-28T02:00:00Z
    disappear 2026-11-29T02:00:00Z
job report-v2: added
  ticks in the next 48h: 2 appear
    appear    2026-11-28T02:00:00Z
    appear    2026-11-29T02:00:00Z
differences: jobs 1 added, 1 removed
`, code: exitDiffers},
		{name: "schedule", cur: strings.Replace(diffBase, "0 2 * * *", "0 4 * * *", 1), want: `job report: changed
  schedule: "0 2 * * *" -> "0 4 * * *"
  ticks in the next 48h: 2 move
    move      2026-11-28T02:00:00Z -> 2026-11-28T04:00:00Z (+2h)
    move      2026-11-29T02:00:00Z -> 2026-11-29T04:00:00Z (+2h)
differences: jobs 1 changed
`, code: exitDiffers},
		{name: "timezone", cur: strings.Replace(diffBase, "    http:", "    timezone: America/New_York\n    http:", 1), want: `job report: changed
  timezone: "UTC" -> "America/New_York"
  ticks in the next 48h: 2 move
    move      2026-11-28T02:00:00Z -> 2026-11-28T02:00:00-05:00 EST (+5h)
    move      2026-11-29T02:00:00Z -> 2026-11-29T02:00:00-05:00 EST (+5h)
differences: jobs 1 changed
`, code: exitDiffers},
		{name: "exclusion", cur: strings.Replace(diffBase, "    http:", "    exclude: [{cron: \"* * * * 0\"}]\n    http:", 1), want: `job report: changed
  exclude[0].cron: (none) -> "* * * * 0"
  ticks in the next 48h: 1 disappear
    disappear 2026-11-29T02:00:00Z
differences: jobs 1 changed
`, code: exitDiffers},
		{name: "limits", cur: strings.Replace(diffBase, "    http:", "    max_concurrency: 3\n    overlap: queue\n    queue_limit: 5\n    http:", 1), want: `job report: changed
  max_concurrency: 1 -> 3
  overlap: "skip" -> "queue"
  queue_limit: 1 -> 5
differences: jobs 1 changed
`, code: exitDiffers},
		{name: "target", cur: strings.Replace(diffBase, "http://reports/run", "http://reports-v2/run", 1), want: `job report: changed
  http.url: "http://reports/run" -> "http://reports-v2/run"
differences: jobs 1 changed
`, code: exitDiffers},
		{name: "secret", cur: diffBase, headers: map[string][2]string{"report-headers.yaml": {"Authorization: Bearer s3cret-one\n", "Authorization: Bearer s3cret-two\n"}}, want: `job report: changed
  http.headers.Authorization: changed (secret, value not shown)
differences: jobs 1 changed
`, code: exitDiffers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := tc.headers
			if headers == nil {
				headers = sameHeaders
			}
			out, errOut, code := runDiff(t, diffBase, tc.cur, headers, "--window", "48h")
			if code != tc.code || errOut != "" {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			if out != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tc.want)
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("the output shows a secret value:\n%s", out)
			}
		})
	}
}

// Ticks that move by two hours before Berlin leaves summer time and by one
// after: the diff shows each with its own offset.
func TestDiffAcrossDST(t *testing.T) {
	old := "jobs:\n  - {name: settle, schedule: \"30 2 * * *\", exec: {command: [/bin/true]}}\n"
	cur := "jobs:\n  - {name: settle, schedule: \"30 2 * * *\", timezone: Europe/Berlin, exec: {command: [/bin/true]}}\n"
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	for name, body := range map[string]string{"old.yaml": old, "new.yaml": cur} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	from := time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC)
	code := diffCommand(context.Background(), []string{"--config", filepath.Join(dir, "new.yaml"),
		"--against", filepath.Join(dir, "old.yaml"), "--window", "96h"}, &stdout, &stderr, from)
	want := `job settle: changed
  timezone: "UTC" -> "Europe/Berlin"
  ticks in the next 96h: 4 move
    move      2026-10-23T02:30:00Z -> 2026-10-23T02:30:00+02:00 CEST (-2h)
    move      2026-10-24T02:30:00Z -> 2026-10-24T02:30:00+02:00 CEST (-2h)
    move      2026-10-25T02:30:00Z -> 2026-10-25T02:30:00+02:00 CEST (-2h)
    move      2026-10-26T02:30:00Z -> 2026-10-26T02:30:00+01:00 CET (-1h)
differences: jobs 1 changed
`
	if code != exitDiffers || stdout.String() != want {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", code, stdout.String(), want)
	}
}

// An invalid FILE is a usage error with validate's messages; so is a
// missing --config; -o json is the report for tools; every line of the
// table fits 100 columns, however long a value.
func TestDiffExitsAndFormats(t *testing.T) {
	_, errOut, code := runDiff(t, diffBase, "jobs:\n  - {name: x, schedule: \"0 2 * *\", exec: {command: [a]}}\n", sameHeaders)
	if code != exitUsage || !strings.Contains(errOut, `jobs[0] "x": schedule: expected 5 or 6 fields, got 4`) {
		t.Errorf("invalid FILE: exit %d, stderr %q", code, errOut)
	}
	var stdout, stderr bytes.Buffer
	if code := diffCommand(context.Background(), nil, &stdout, &stderr, diffNow); code != exitUsage || !strings.Contains(stderr.String(), "--config is required") {
		t.Errorf("no --config: exit %d, stderr %q", code, stderr.String())
	}

	long := strings.Replace(diffBase, "http://reports/run", "http://reports/"+strings.Repeat("very-long-path/", 20), 1)
	out, _, code := runDiff(t, diffBase, long, sameHeaders)
	if code != exitDiffers {
		t.Errorf("long value: exit %d", code)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}

	out, _, code = runDiff(t, diffBase, strings.Replace(diffBase, "0 2 * * *", "0 4 * * *", 1), sameHeaders, "-o", "json", "--window", "48h")
	var rep struct {
		Changes []struct {
			Kind, Name, Change string
			Ticks              struct{ Move int }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitDiffers {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if len(rep.Changes) != 1 || rep.Changes[0].Name != "report" || rep.Changes[0].Ticks.Move != 2 {
		t.Errorf("-o json: %+v", rep)
	}
}

// A job moved into a team file (include:) shows its team changed and its
// ticks unchanged; the secret read next to the team file is compared, not
// shown.
func TestDiffTeamFile(t *testing.T) {
	cur := "include: [\"teams/*.yaml\"]\njobs: []\n"
	teamFile := "team: payments\n" + strings.Replace(diffBase, "headers_file: report-headers.yaml", "headers_file: ../report-headers.yaml", 1)
	extra := map[string][2]string{
		"report-headers.yaml": sameHeaders["report-headers.yaml"],
		"teams/payments.yaml": {"", teamFile},
	}
	out, errOut, code := runDiff(t, diffBase, cur, extra, "--window", "48h")
	want := `job report: changed
  team: (none) -> "payments"
differences: jobs 1 changed
`
	if code != exitDiffers || errOut != "" || out != want {
		t.Errorf("exit %d, stderr %q, output:\n%s\nwant:\n%s", code, errOut, out, want)
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the output shows a secret value:\n%s", out)
	}
}
