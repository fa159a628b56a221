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

	"github.com/etcdsched/scheduler/config"
)

// nextAt runs `scheduler next` in this process as if the clock read now.
func nextAt(t *testing.T, now time.Time, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = nextCommand(args, &o, &e, now)
	return o.String(), e.String(), code
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// dstJobs tick at 02:30 and on the hour in Europe/Berlin, where 2026's
// clocks jump from 02:00 to 03:00 on 29 March and back from 03:00 to 02:00
// on 25 October; one of them has jitter.
const dstJobs = `cluster:
  etcd:
    endpoints: ["http://127.0.0.1:2379"]
jobs:
  - name: berlin
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    exec: {command: ["true"]}
  - name: hourly
    schedule: "0 * * * *"
    timezone: Europe/Berlin
    exec: {command: ["true"]}
  - name: spread
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    jitter: 10m
    exec: {command: ["true"]}
`

// nextJSON is `next -o json` with the times kept as written, offsets and
// all.
type nextJSON []struct {
	Job      string `json:"job"`
	Timezone string `json:"timezone"`
	Jitter   string `json:"jitter"`
	Fires    []struct {
		ScheduledAt    string `json:"scheduled_at"`
		ScheduledAtUTC string `json:"scheduled_at_utc"`
		DueAt          string `json:"due_at"`
	} `json:"fires"`
}

// The fire times on both daylight-saving days of 2026: the 02:30 that does
// not exist in March runs once at 03:30 CEST, the 02:30 that happens twice
// in October runs once, the first time; an hourly schedule follows the
// real clock through the repeated hour.
func TestNextAcrossDST(t *testing.T) {
	path := writeFile(t, dstJobs)
	for _, tc := range []struct {
		name, job, now string
		want           []string
	}{
		{"spring gap", "berlin", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"}},
		{"fall repeat", "berlin", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"}},
		{"fall, from inside the repeated hour", "berlin", "2026-10-25T02:10:00+01:00",
			[]string{"2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00", "2026-10-28T02:30:00+01:00"}},
		{"hourly through the spring gap", "hourly", "2026-03-29T01:30:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00", "2026-03-29T05:00:00+02:00"}},
		{"hourly through the repeated hour", "hourly", "2026-10-25T01:30:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := nextAt(t, at(t, tc.now), "--config", path, tc.job, "-n", "3", "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got nextJSON
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(got) != 1 || got[0].Job != tc.job || got[0].Timezone != "Europe/Berlin" || len(got[0].Fires) != len(tc.want) {
				t.Fatalf("got %+v", got)
			}
			for i, f := range got[0].Fires {
				if f.ScheduledAt != tc.want[i] {
					t.Errorf("fire %d at %s, want %s", i, f.ScheduledAt, tc.want[i])
				}
				if utc := at(t, tc.want[i]).UTC().Format(time.RFC3339); f.ScheduledAtUTC != utc {
					t.Errorf("fire %d in UTC %s, want %s", i, f.ScheduledAtUTC, utc)
				}
				if f.DueAt != "" {
					t.Errorf("fire %d has a due time %s without jitter", i, f.DueAt)
				}
			}

			// The table says the same, with the offset and zone name
			// that tell the two 02:30s of October apart.
			out, _, code = nextAt(t, at(t, tc.now), "--config", path, tc.job, "-n", "3")
			first := at(t, tc.want[0]).In(mustZone(t, "Europe/Berlin")).Format(localFormat)
			if code != 0 || !strings.Contains(out, first) || !strings.Contains(out, at(t, tc.want[0]).UTC().Format(time.RFC3339)) {
				t.Errorf("table lacks %s:\n%s", first, out)
			}
		})
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// With jitter, the tick stays the scheduled time and the due time is the
// tick plus the job's JitterAt, within [0, jitter): what the leader plans.
func TestNextJitter(t *testing.T) {
	path := writeFile(t, dstJobs)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	job := cfg.Job("spread")
	out, errOut, code := nextAt(t, at(t, "2026-03-28T12:00:00+01:00"), "--config", path, "spread", "-n", "2", "-o", "json")
	var got nextJSON
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || len(got[0].Fires) != 2 || got[0].Jitter != "10m0s" {
		t.Fatalf("exit %d %s: %s", code, errOut, out)
	}
	for _, f := range got[0].Fires {
		tick := at(t, f.ScheduledAt)
		due, err := time.Parse(time.RFC3339Nano, f.DueAt)
		if err != nil {
			t.Fatal(err)
		}
		if want := tick.Add(job.JitterAt(tick)); !due.Equal(want) || due.Sub(tick) >= 10*time.Minute {
			t.Errorf("tick %s: due %s, want %s", tick, due, want)
		}
	}
	table, _, _ := nextAt(t, at(t, "2026-03-28T12:00:00+01:00"), "--config", path, "-n", "1")
	delay := "+" + at(t, got[0].Fires[0].DueAt).Sub(at(t, got[0].Fires[0].ScheduledAt)).Round(time.Millisecond).String()
	if !strings.Contains(table, "JITTER") || !strings.Contains(table, delay) || strings.Contains(table, "DUE") || strings.Count(table, "\n") != 4 {
		t.Errorf("table of every job, one fire each, with the jitter's delay %s:\n%s", delay, table)
	}
	table, _, _ = nextAt(t, at(t, "2026-03-28T12:00:00+01:00"), "--config", path, "-n", "1", "-o", "wide")
	if !strings.Contains(table, "DUE (UTC, WITH JITTER)") || !strings.Contains(table, got[0].Fires[0].DueAt) {
		t.Errorf("-o wide: want the due time %s:\n%s", got[0].Fires[0].DueAt, table)
	}
}

// A schedule with no next time (a job only ever triggered) says so
// rather than printing nothing.
func TestNextNever(t *testing.T) {
	var b bytes.Buffer
	if err := nextTable([]jobFires{{Job: "manual", Schedule: "@manually", Timezone: "UTC", Fires: []fire{}}}, view{wide: true}).write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "manual  never (triggered only)   -                   @manually  UTC") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestNextErrors(t *testing.T) {
	path := writeFile(t, dstJobs)
	bad := writeFile(t, "jobs:\n  - name: x\n    schedule: \"61 * * * *\"\n    exec: {command: [\"true\"]}\n")
	now := at(t, "2026-01-01T00:00:00Z")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "--config is required"},
		{[]string{"--config", path, "-n", "0"}, 2, "-n 0"},
		{[]string{"--config", path, "-o", "yaml"}, 2, `-o "yaml"`},
		{[]string{"--config", path, "-n", "10001"}, 2, "-n 10001: want 1 to 10000"},
		{[]string{"--config", path, "--from", "tomorrow"}, 2, `--from "tomorrow" is not a time: want RFC3339`},
		{[]string{"--config", path, "--until", "2026-13-01T00:00:00Z"}, 2, `--until "2026-13-01T00:00:00Z" is not a time`},
		{[]string{"--config", path, "--until", "2025-01-01T00:00:00Z"}, 2, "--until 2025-01-01T00:00:00Z is not after --from 2026-01-01T00:00:00Z"},
		{[]string{"--config", path, "-n", "3", "--until", "2026-02-01T00:00:00Z"}, 2, "-n and --until both given"},
		{[]string{"--config", path, "hourly", "--until", "2028-01-01T00:00:00Z"}, 2, `job "hourly" fires more than 10000 times before --until 2028-01-01T00:00:00Z`},
		{[]string{"--config", path, "a", "b"}, 2, `unexpected argument "b"`},
		{[]string{"--config", path, "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--config", "/nonexistent/jobs.yaml"}, 2, "no such file"},
		{[]string{"--config", path, "nope"}, 1, `no job "nope"`},
		{[]string{"--config", bad}, 1, bad + ":3:"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := nextAt(t, now, tc.args...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

// `scheduler next -n 1` on config/example.yaml names, for every job not
// paused, the next_run the leader itself shows on GET /api/v1/jobs. The leader reads
// its own clock somewhere between before and after, so its answer is the
// next tick after one of the two; on a schedule ticking every few seconds
// both are tried rather than hoping no tick falls in between.
func TestNextAgreesWithLeader(t *testing.T) {
	example, err := os.ReadFile("../../config/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	adapted := strings.NewReplacer(
		"data_dir: ./data", "data_dir: "+t.TempDir(),
		"listen: 127.0.0.1:8080", "listen: 127.0.0.1:0",
	).Replace(string(example))
	if adapted == string(example) {
		t.Fatal("config/example.yaml no longer has the data_dir and listen lines this test adapts")
	}
	path := writeFile(t, adapted)
	p := startProc(t, "example", path)

	before := time.Now()
	jobs, err := p.api.Jobs(context.Background())
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(cfg.Jobs) {
		t.Fatalf("the API lists %d jobs, the file has %d", len(jobs), len(cfg.Jobs))
	}
	nextOne := func(job string, now time.Time) time.Time {
		out, errOut, code := nextAt(t, now, "--config", path, job, "-n", "1", "-o", "json")
		var got []jobFires
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 || len(got[0].Fires) != 1 {
			t.Fatalf("next %s: exit %d %s: %s", job, code, errOut, out)
		}
		return got[0].Fires[0].ScheduledAt
	}
	for _, j := range jobs {
		if j.Paused && j.PausedUntil.IsZero() {
			// Paused until someone resumes it: no tick of it will run, so
			// the leader shows none; `next` previews the schedule.
			if !j.NextRun.IsZero() {
				t.Errorf("%s is paused: the leader's next_run %s, want none", j.Name, j.NextRun)
			}
			continue
		}
		early, late := nextOne(j.Name, before), nextOne(j.Name, after)
		if !j.NextRun.Equal(early) && !j.NextRun.Equal(late) {
			t.Errorf("%s: the leader's next_run %s, scheduler next %s (or %s)", j.Name, j.NextRun, early, late)
		}
	}
}

// An hourly job's next daylight-saving change five months ahead is in
// reach: -n up to 10,000 from a given --from, and --until ends the list
// at a time instead of a count. The clock (now) is far from both, so
// only the flags can place the window.
func TestNextFromUntil(t *testing.T) {
	path := writeFile(t, dstJobs)
	now := at(t, "2020-01-01T00:00:00Z")
	out, errOut, code := nextAt(t, now, "--config", path, "hourly", "--from", "2026-05-25T00:00:00+02:00", "-n", "10000", "-o", "json")
	var got nextJSON
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	fires := got[0].Fires
	if len(fires) != 10000 || fires[0].ScheduledAt != "2026-05-25T01:00:00+02:00" {
		t.Fatalf("%d fires from %s; want 10000 from 2026-05-25T01:00:00+02:00", len(fires), fires[0].ScheduledAt)
	}
	twice := 0
	for _, f := range fires {
		if strings.HasPrefix(f.ScheduledAt, "2026-10-25T02:00:00") {
			twice++
		}
	}
	if twice != 2 {
		t.Errorf("the repeated 02:00 of 25 October fires %d times in the list, want 2 (+02:00 and +01:00)", twice)
	}

	out, errOut, code = nextAt(t, now, "--config", path, "hourly",
		"--from", "2026-10-25T00:30:00+02:00", "--until", "2026-10-25T04:00:00+01:00", "-o", "json")
	got = nil
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 1 {
		t.Fatalf("--until: exit %d %s", code, errOut)
	}
	var ticks []string
	for _, f := range got[0].Fires {
		ticks = append(ticks, f.ScheduledAt)
	}
	want := []string{"2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00",
		"2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"}
	if strings.Join(ticks, " ") != strings.Join(want, " ") {
		t.Errorf("--until: %q\nwant %q (the end included)", ticks, want)
	}
}
