package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := mustParse(t, `
cluster:
  etcd:
    prefix: /sched
jobs:
  - name: ping
    schedule: "@every 10s"
    http: {url: "http://127.0.0.1:8080/healthz"}
  - name: date
    schedule: "0 2 * * *"
    exec: {command: [date]}
`)
	want := &Config{
		Cluster: Cluster{
			Etcd:        Etcd{Prefix: "/sched/", DialTimeout: Duration(5 * time.Second)},
			DataDir:     "./data",
			SessionTTL:  Duration(5 * time.Second),
			LeaseMargin: Duration(time.Second),
			// a removed job's records stay a week.
			RemovedHistoryTTL: Duration(168 * time.Hour),
		},
		API:    API{Listen: "127.0.0.1:8080"},
		Worker: Worker{MaxParallel: 64, ShutdownGrace: Duration(30 * time.Second), MaxInterruptions: 3},
		Notify: Notify{MaxAge: Duration(time.Hour)},
	}
	job := Job{
		Timezone:         "UTC",
		MaxConcurrency:   1,
		Overlap:          OverlapSkip,
		QueueLimit:       1,
		Timeout:          Duration(time.Hour),
		Retries:          Retries{Max: 0, Backoff: Duration(time.Second), MaxBackoff: Duration(time.Minute)},
		CatchUp:          CatchUpLatest,
		StartingDeadline: Duration(time.Minute),
		HistoryLimit:     100,
		// skipped and missed records are kept apart from executed ones.
		SkippedHistoryLimit: 20,
	}
	ping, date := job, job
	ping.Name, ping.Schedule = "ping", "@every 10s"
	ping.HTTP = &HTTP{Method: "GET", URL: "http://127.0.0.1:8080/healthz", SuccessCodes: []string{"2xx"}}
	date.Name, date.Schedule = "date", "0 2 * * *"
	date.Exec = &Exec{Command: []string{"date"}, KillGrace: Duration(10 * time.Second)}
	want.Jobs = []Job{ping, date}
	want.indexJobs()
	want.Files = cfg.Files // the files read, not a setting (TestIncludeMergesTeamFiles)
	if !reflect.DeepEqual(cfg, want) {
		g, _ := json.MarshalIndent(cfg, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("got:\n%s\nwant:\n%s", g, w)
	}
}

func TestExplicitValuesOverDefaults(t *testing.T) {
	cfg := mustParse(t, `
jobs:
  - name: ping
    schedule: "@every 10s"
    retries: {max: 3}
    queue_limit: 0
    skipped_history_limit: 5
    http: {url: "http://x", method: post, success_codes: [200, 3XX]}
`)
	j := cfg.Jobs[0]
	if j.SkippedHistoryLimit != 5 || j.HistoryLimit != DefaultHistoryLimit {
		t.Errorf("history limits %d/%d, want 100/5", j.HistoryLimit, j.SkippedHistoryLimit)
	}
	if j.Retries != (Retries{Max: 3, Backoff: Duration(time.Second), MaxBackoff: Duration(time.Minute)}) {
		t.Errorf("a partial retries mapping lost defaults: %+v", j.Retries)
	}
	if j.QueueLimit != 0 {
		t.Errorf("explicit queue_limit 0 became %d", j.QueueLimit)
	}
	if j.HTTP.Method != "POST" || !reflect.DeepEqual(j.HTTP.SuccessCodes, []string{"200", "3xx"}) {
		t.Errorf("http not normalized: %+v", j.HTTP)
	}
}

func TestMergeKeys(t *testing.T) {
	cfg := mustParse(t, `
x-common: &common
  timezone: Europe/Berlin
  timeout: 5m
  exec: {command: [date]}
jobs:
  - <<: *common
    name: a
    schedule: "0 2 * * *"
  - <<: *common
    name: b
    schedule: "0 3 * * *"
    timeout: 1m
`)
	a, b := cfg.Jobs[0], cfg.Jobs[1]
	if a.Timezone != "Europe/Berlin" || a.Timeout != Duration(5*time.Minute) || a.Exec == nil {
		t.Errorf("merge not applied: %+v", a)
	}
	if b.Timeout != Duration(time.Minute) || b.Name != "b" {
		t.Errorf("keys next to the merge key must win: %+v", b)
	}
	if a.Exec == b.Exec {
		t.Error("jobs share one Exec through the anchor")
	}
}

func TestHash(t *testing.T) {
	base := `
jobs:
  - name: a
    schedule: "@every 10s"
    exec: {command: [date]}
`
	h := mustParse(t, base).Hash()
	if len(h) != 12 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not 12 hex digits", h)
	}
	if h2 := mustParse(t, base).Hash(); h2 != h {
		t.Errorf("same content, different hash: %s != %s", h, h2)
	}
	same := `
# comments, order and defaults written out do not matter
jobs:
  - schedule: "@every 10s"
    exec:
      kill_grace: 10s
      command: ["date"]
    name: a
    timezone: UTC
cluster: {etcd: {prefix: /scheduler, endpoints: []}}
`
	if h2 := mustParse(t, same).Hash(); h2 != h {
		t.Errorf("equivalent config, different hash: %s != %s", h, h2)
	}
	for _, change := range []string{
		`{name: b, schedule: "@every 10s", exec: {command: [date]}}`,
		`{name: a, schedule: "@every 11s", exec: {command: [date]}}`,
		`{name: a, schedule: "@every 10s", exec: {command: [date, -u]}}`,
		`{name: a, schedule: "@every 10s", exec: {command: [date]}, paused: true}`,
		`{name: a, schedule: "@every 10s", exec: {command: [date], env: {A: b}}}`,
	} {
		if h2 := mustParse(t, "jobs: ["+change+"]").Hash(); h2 == h {
			t.Errorf("changed job %s, same hash", change)
		}
	}
}

func TestValidateInCode(t *testing.T) {
	cfg := mustParse(t, `jobs: [{name: a, schedule: "@every 10s", exec: {command: [date]}}]`)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a parsed config does not validate: %v", err)
	}
	cfg.API.Listen = "nowhere"
	cfg.Jobs[0].MaxConcurrency = 0
	err := cfg.Validate()
	want := `api.listen: invalid address "nowhere": want host:port, e.g. 127.0.0.1:8080 or :8080
jobs[0] "a": max_concurrency: must be between 1 and 1000, got 0`
	var cerr *Error
	if !errors.As(err, &cerr) || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

func TestJobHelpers(t *testing.T) {
	cfg := mustParse(t, `
jobs:
  - name: berlin
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    jitter: 30s
    retries: {max: 5, backoff: 1s, max_backoff: 5s}
    exec: {command: [date]}
`)
	j := cfg.Job("berlin")
	if j == nil || cfg.Job("nope") != nil {
		t.Fatal("Job lookup")
	}
	if j.Location().String() != "Europe/Berlin" {
		t.Errorf("Location = %s", j.Location())
	}
	s, err := j.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)
	if got := s.Next(from).UTC().Format(time.RFC3339); got != "2026-10-25T00:30:00Z" {
		t.Errorf("Next = %s", got)
	}
	tick := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)
	if d := j.JitterAt(tick); d < 0 || d >= 30*time.Second || d != j.JitterAt(tick) {
		t.Errorf("JitterAt = %v", d)
	}
	var delays []time.Duration
	for n := 1; n <= 5; n++ {
		delays = append(delays, j.Retries.Delay(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !reflect.DeepEqual(delays, want) {
		t.Errorf("Delay = %v, want %v", delays, want)
	}

	// A Job travels as JSON in queue entries; it must come back whole and
	// still know its zone and schedule.
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, j) {
		t.Errorf("JSON round trip:\n got %+v\nwant %+v", back, *j)
	}
	if back.Location().String() != "Europe/Berlin" {
		t.Errorf("Location after round trip = %s", back.Location())
	}
}

func TestEmptyTimezoneIsUTC(t *testing.T) {
	cfg := mustParse(t, `jobs: [{name: a, schedule: "0 2 * * *", timezone: "", exec: {command: [date]}}]`)
	if j := cfg.Jobs[0]; j.Timezone != "UTC" || j.Location() != time.UTC {
		t.Errorf("timezone %q, location %s", j.Timezone, j.Location())
	}
}
