package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// badFiles maps each broken file to the exact report it must produce, one
// problem per line, in file order.
var badFiles = map[string][]string{
	"testdata/active.bad.yaml": {
		`testdata/active.bad.yaml:5:13: jobs[0] "backwards": end_at: must be after start_at (2027-06-30T00:00:00+02:00), got "2026-12-01T00:00:00+01:00"`,
		`testdata/active.bad.yaml:10:13: jobs[1] "empty-period": end_at: must be after start_at (2026-12-01T00:00:00+01:00), got "2026-12-01T00:00:00+01:00"`,
		`testdata/active.bad.yaml:14:15: jobs[2] "not-a-time": start_at: invalid time "1 December 2026": want RFC 3339, e.g. "2026-12-01T00:00:00+01:00"`,
	},
	"testdata/calendar.bad.yaml": {
		`testdata/calendar.bad.yaml:3:25: calendars[0].dates[1]: date "2026-02-30" does not exist`,
		`testdata/calendar.bad.yaml:3:37: calendars[0].dates[2]: invalid date "26-1-1": want YYYY-MM-DD, e.g. 2026-12-24`,
		`testdata/calendar.bad.yaml:4:11: calendars[1].name: duplicate calendar name "holidays-de" (first at line 2)`,
		`testdata/calendar.bad.yaml:11:19: jobs[0] "settlement": exclude[1].calendar: unknown calendar "holidays-fr": declare it under calendars`,
	},
	"testdata/exclude.bad.yaml": {
		`testdata/exclude.bad.yaml:6:9: jobs[0] "settlement": exclude[0]: want one of calendar, cron or from/to, e.g. {calendar: holidays}`,
		`testdata/exclude.bad.yaml:7:9: jobs[0] "settlement": exclude[1]: calendar and cron are mutually exclusive: write one rule per entry`,
		`testdata/exclude.bad.yaml:8:9: jobs[0] "settlement": exclude[2].to: required with from`,
		`testdata/exclude.bad.yaml:9:49: jobs[0] "settlement": exclude[3].to: must be after from (2027-01-02T00:00:00+01:00), got "2026-12-28T00:00:00+01:00"`,
		`testdata/exclude.bad.yaml:10:16: jobs[0] "settlement": exclude[4].from: invalid time "2026-12-28": want RFC 3339, e.g. "2026-12-01T00:00:00+01:00"`,
		`testdata/exclude.bad.yaml:11:15: jobs[0] "settlement": exclude[5].cron: expected 5 or 6 fields, got 4`,
		`testdata/exclude.bad.yaml:12:15: jobs[0] "settlement": exclude[6].cron: "@every 1h": want a cron expression (5 or 6 fields) or a macro such as @daily`,
	},
	"testdata/never.bad.yaml": {
		`testdata/never.bad.yaml:6:16: jobs[0] "fridays": schedules: never fires: every tick is excluded (checked over 5 years of ticks)`,
		`testdata/never.bad.yaml:11:15: jobs[1] "christmas-only": schedule: never fires between 2026-12-24T00:00:00+01:00 and end_at 2026-12-27T00:00:00+01:00 after exclusions`,
	},
	"testdata/max_runs.bad.yaml": {
		`testdata/max_runs.bad.yaml:4:15: jobs[0] "settlement": max_runs: must be a whole number of runs from 1 (or left out: no limit), got -1`,
	},
	"testdata/schedules.bad.yaml": {
		`testdata/schedules.bad.yaml:4:16: jobs[0] "both": schedules: schedule and schedules are mutually exclusive: schedule is the one-item form of schedules`,
		`testdata/schedules.bad.yaml:7:16: jobs[1] "empty": schedules: must not be empty`,
		`testdata/schedules.bad.yaml:12:9: jobs[2] "bad-item": schedules[1]: hour "25": out of range 0-23`,
		`testdata/schedules.bad.yaml:13:9: jobs[2] "bad-item": schedules[2]: @manually cannot be combined with other schedules: the job would fire by them anyway`,
	},
	"testdata/alias_cycle.bad.yaml": {
		`testdata/alias_cycle.bad.yaml:3:7: jobs[0]: alias *defaults refers to a value that contains it`,
	},
	"testdata/rate.bad.yaml": {
		`testdata/rate.bad.yaml:3:19: resources[0] "github-api": rate.count: must be between 1 and 1000, got 0`,
		`testdata/rate.bad.yaml:7:28: jobs[0] "sync": rate.per: must be at least 1s, got 500ms`,
	},
	"testdata/concurrency_key.bad.yaml": {
		`testdata/concurrency_key.bad.yaml:4:22: jobs[0] "sync-customer": concurrency_key: not a valid template: unexpected "}" in operand`,
	},
	"testdata/concurrency_key_input.bad.yaml": {
		`testdata/concurrency_key_input.bad.yaml:5:12: jobs[0] "sync-customer": input: has no "customer.id", which concurrency_key "{{ .Input.customer.id }}" needs`,
		`testdata/concurrency_key_input.bad.yaml:11:12: jobs[1] "sync-region": input: renders no valid concurrency key: concurrency_key "region-{{ .Input.region }}" renders "region-eu west", which is not a valid key: use 1 to 128 letters, digits, '.', '_', ':' or '-'`,
	},
	"testdata/hold_slot.bad.yaml": {
		`testdata/hold_slot.bad.yaml:4:39: jobs[0] "strict": retries.hold_slot: needs retries.max > 0: there is no later attempt to hold the slot for`,
	},
	"testdata/rate_resource.bad.yaml": {
		`testdata/rate_resource.bad.yaml:4:5: resources[1] "gitlab-api": limit: required`,
		`testdata/rate_resource.bad.yaml:8:29: jobs[0] "sync": resources[1]: unknown resource "gitlub-api": declare it under resources`,
	},
	"testdata/both.bad.yaml": {
		`testdata/both.bad.yaml:7:7: jobs[0] "both": exec: http and exec are mutually exclusive`,
	},
	"testdata/cluster.bad.yaml": {
		`testdata/cluster.bad.yaml:3:34: cluster.etcd.endpoints[1]: invalid endpoint "ftp://10.0.0.2:2379": want host:port or http(s)://host:port`,
		`testdata/cluster.bad.yaml:3:57: cluster.etcd.endpoints[2]: invalid endpoint "10.0.0.3": want host:port or http(s)://host:port`,
		`testdata/cluster.bad.yaml:4:13: cluster.etcd.prefix: must start with "/", got "scheduler"`,
		`testdata/cluster.bad.yaml:5:19: cluster.etcd.dial_timeout: must be positive, got 0s`,
		`testdata/cluster.bad.yaml:6:20: cluster.etcd.password_file: set without username`,
		`testdata/cluster.bad.yaml:7:22: cluster.etcd.tls.cert_file: set without key_file`,
	},
	"testdata/command.bad.yaml": {
		`testdata/command.bad.yaml:5:16: jobs[0] "nothing": exec.command: required: the program and its arguments, e.g. ["date"]`,
		`testdata/command.bad.yaml:9:17: jobs[1] "blank": exec.command[0]: must name a program`,
	},
	"testdata/cron.bad.yaml": {
		`testdata/cron.bad.yaml:3:15: jobs[0] "report": schedule: expected 5 or 6 fields, got 4`,
	},
	"testdata/cron_range.bad.yaml": {
		`testdata/cron_range.bad.yaml:3:15: jobs[0] "report": schedule: hour "25": out of range 0-23`,
		`testdata/cron_range.bad.yaml:7:15: jobs[1] "cleanup": schedule: month "jan-xyz": "xyz" is not a number or name`,
	},
	"testdata/cron_wrap.bad.yaml": {
		`testdata/cron_wrap.bad.yaml:3:15: jobs[0] "night": schedule: hour "22-2": range 22-2 runs backwards: ranges do not wrap around, write "22-23,0-2"`,
		`testdata/cron_wrap.bad.yaml:6:15: jobs[1] "typo": schedule: minute "10-0": range 10-0 runs backwards: ranges do not wrap around, write "10-59,0"`,
	},
	"testdata/cron_tz.bad.yaml": {
		`testdata/cron_tz.bad.yaml:3:15: jobs[0] "report": schedule: "CRON_TZ=Europe/Berlin" prefix is not allowed: set the timezone field instead`,
	},
	"testdata/history.bad.yaml": {
		`testdata/history.bad.yaml:5:28: jobs[0] "flood": skipped_history_limit: must be at least 1, got 0`,
		`testdata/history.bad.yaml:9:20: jobs[1] "quiet": history_limit: must be at least 1, got -1`,
		`testdata/history.bad.yaml:10:28: jobs[1] "quiet": skipped_history_limit: expected an integer, got "many"`,
	},
	"testdata/documents.bad.yaml": {
		`testdata/documents.bad.yaml:2:1: only one document is allowed`,
	},
	"testdata/dup.bad.yaml": {
		`testdata/dup.bad.yaml:11:11: jobs[2].name: duplicate job name "a" (first at line 3)`,
	},
	"testdata/dup_key.bad.yaml": {
		`testdata/dup_key.bad.yaml:4:5: jobs[0] "ping": schedule: duplicate key "schedule" (first at line 3)`,
	},
	"testdata/duration.bad.yaml": {
		`testdata/duration.bad.yaml:4:14: jobs[0] "ping": timeout: invalid duration "10": want e.g. "30s", "5m" or "1h30m"`,
		`testdata/duration.bad.yaml:5:24: jobs[0] "ping": starting_deadline: must be positive, got 0s`,
		`testdata/duration.bad.yaml:6:20: jobs[0] "ping": history_limit: must be at least 1, got 0`,
	},
	"testdata/overdue.bad.yaml": {
		`testdata/overdue.bad.yaml:4:20: jobs[0] "backup": overdue_after: must be positive (or left out: never overdue), got 0s`,
		`testdata/overdue.bad.yaml:9:20: jobs[1] "report": overdue_after: must be positive (or left out: never overdue), got -1h0m0s`,
	},
	"testdata/empty.bad.yaml": {
		`testdata/empty.bad.yaml:1:1: file is empty`,
	},
	"testdata/every.bad.yaml": {
		`testdata/every.bad.yaml:3:15: jobs[0] "fast": schedule: @every 10ms: must be at least 100ms`,
		`testdata/every.bad.yaml:7:15: jobs[1] "odd": schedule: @every: invalid duration "1.5"`,
	},
	"testdata/env_file.bad.yaml": {
		`testdata/env_file.bad.yaml:7:17: jobs[0] "both": exec.env_file: variable "TOKEN" is set both in env (line 6) and in secrets/app.env (line 2)`,
		`testdata/env_file.bad.yaml:12:17: jobs[1] "broken": exec.env_file: secrets/bad.env:1: want KEY=VALUE`,
		`testdata/env_file.bad.yaml:12:17: jobs[1] "broken": exec.env_file: secrets/bad.env:2: invalid environment variable name " SPACE"`,
		`testdata/env_file.bad.yaml:12:17: jobs[1] "broken": exec.env_file: secrets/bad.env:4: A is set twice (first on line 3)`,
		`testdata/env_file.bad.yaml:12:17: jobs[1] "broken": exec.env_file: secrets/bad.env:5: NUL: value must not contain NUL`,
	},
	"testdata/headers_file.bad.yaml": {
		`testdata/headers_file.bad.yaml:6:21: jobs[0] "missing": http.headers_file: cannot read "secrets/nope.yaml": no such file or directory`,
		`testdata/headers_file.bad.yaml:11:21: jobs[1] "broken": http.headers_file: secrets/bad_headers.yaml:1:1: invalid header name "X Team"`,
		`testdata/headers_file.bad.yaml:11:21: jobs[1] "broken": http.headers_file: secrets/bad_headers.yaml:2:1: header "X-Empty": want a string value`,
		`testdata/headers_file.bad.yaml:11:21: jobs[1] "broken": http.headers_file: secrets/bad_headers.yaml:3:1: header "X-List": want a string value`,
		`testdata/headers_file.bad.yaml:11:21: jobs[1] "broken": http.headers_file: secrets/bad_headers.yaml:5:1: header "x-token" is set twice (first on line 4)`,
		`testdata/headers_file.bad.yaml:17:21: jobs[2] "both": http.headers_file: header "X-Token" is set both in headers (line 16) and in secrets/headers.yaml (line 3)`,
	},
	"testdata/flow.bad.yaml": {
		`testdata/flow.bad.yaml:6:5: did not find expected ',' or ']'`,
	},
	"testdata/indent.bad.yaml": {
		`testdata/indent.bad.yaml:4:4: did not find expected '-' indicator (check the indentation)`,
	},
	"testdata/job_name.bad.yaml": {
		`testdata/job_name.bad.yaml:2:11: jobs[0].name: invalid job name "Nightly Report": want [a-z0-9][a-z0-9._-]{0,62}`,
		`testdata/job_name.bad.yaml:6:11: jobs[1].name: invalid job name "run@home": want [a-z0-9][a-z0-9._-]{0,62}`,
	},
	"testdata/lease_margin.bad.yaml": {
		`testdata/lease_margin.bad.yaml:3:17: cluster.lease_margin: must be less than session_ttl (5s), got 5s`,
	},
	"testdata/removed_history_ttl.bad.yaml": {
		`testdata/removed_history_ttl.bad.yaml:2:24: cluster.removed_history_ttl: must be at least 1m (how long a removed job's history stays readable), got 30s`,
	},
	"testdata/listen.bad.yaml": {
		`testdata/listen.bad.yaml:2:11: api.listen: invalid address "localhost": want host:port, e.g. 127.0.0.1:8080 or :8080`,
	},
	"testdata/max_concurrency.bad.yaml": {
		`testdata/max_concurrency.bad.yaml:4:22: jobs[0] "none": max_concurrency: must be between 1 and 1000, got 0`,
		`testdata/max_concurrency.bad.yaml:9:22: jobs[1] "lots": max_concurrency: must be between 1 and 1000, got 5000`,
	},
	"testdata/shards.bad.yaml": {
		`testdata/shards.bad.yaml:4:13: jobs[0] "many": shards: must be between 1 and 256 (or absent: not sharded), got 300`,
		`testdata/shards.bad.yaml:10:19: jobs[1] "inputs": shard_inputs: has 3 items but the job has 2 shards: one item a shard at most`,
		`testdata/shards.bad.yaml:15:19: jobs[2] "unsharded": shard_inputs: needs shards: set shards to at least 2, one shard an item`,
	},
	"testdata/merge_bomb.bad.yaml": {
		`testdata/merge_bomb.bad.yaml:10:9: jobs[0]: alias *l6 expands to more than 1000000 nodes: aliases and merge keys may expand to 10 times the file's own nodes (at least 1000000)`,
	},
	"testdata/method.bad.yaml": {
		`testdata/method.bad.yaml:5:15: jobs[0] "ping": http.method: invalid method "GE T"`,
		`testdata/method.bad.yaml:8:17: jobs[0] "ping": http.headers["X Team"]: invalid header name "X Team"`,
	},
	"testdata/missing.bad.yaml": {
		`testdata/missing.bad.yaml:2:5: jobs[0].name: required`,
		`testdata/missing.bad.yaml:2:5: jobs[0].schedule: required`,
	},
	"testdata/multi.bad.yaml": {
		`testdata/multi.bad.yaml:3:16: cluster.session_ttl: must be at least 2s, got 1s`,
		`testdata/multi.bad.yaml:5:11: api.listen: invalid address "8080": want host:port, e.g. 127.0.0.1:8080 or :8080`,
		`testdata/multi.bad.yaml:8:12: resources[0] "db": limit: must be at least 1, got 0`,
		`testdata/multi.bad.yaml:11:15: jobs[0] "report": schedule: expected 5 or 6 fields, got 4`,
		`testdata/multi.bad.yaml:12:15: jobs[0] "report": timezone: unknown time zone "Mars/Base"`,
		`testdata/multi.bad.yaml:13:14: jobs[0] "report": overlap: invalid value "wait": want skip, queue or replace`,
		`testdata/multi.bad.yaml:14:17: jobs[0] "report": resources[0]: unknown resource "dbx": declare it under resources`,
		`testdata/multi.bad.yaml:16:12: jobs[0] "report": http.url: must be an absolute http or https URL, got "example.com"`,
		`testdata/multi.bad.yaml:17:23: jobs[0] "report": http.success_codes[0]: invalid code "700": want 100-599 or a class 1xx-5xx`,
		`testdata/multi.bad.yaml:18:11: jobs[1].name: duplicate job name "report" (first at line 10)`,
		`testdata/multi.bad.yaml:20:14: jobs[1] "report": timeout: must be positive, got -1s`,
		`testdata/multi.bad.yaml:22:16: jobs[1] "report": exec.command: required: the program and its arguments, e.g. ["date"]`,
		`testdata/multi.bad.yaml:23:5: jobs[1] "report": unknown field "unknown"`,
	},
	"testdata/negative.bad.yaml": {
		`testdata/negative.bad.yaml:2:19: worker.shutdown_grace: must not be negative, got -5s`,
		`testdata/negative.bad.yaml:6:13: jobs[0] "report": jitter: must not be negative, got -1s`,
		`testdata/negative.bad.yaml:9:19: jobs[0] "report": exec.kill_grace: must not be negative, got -1s`,
	},
	"testdata/neither.bad.yaml": {
		`testdata/neither.bad.yaml:2:5: jobs[0] "idle": one of http or exec is required`,
	},
	"testdata/overlap.bad.yaml": {
		`testdata/overlap.bad.yaml:4:14: jobs[0] "ping": overlap: invalid value "wait": want skip, queue or replace`,
		`testdata/overlap.bad.yaml:5:15: jobs[0] "ping": catch_up: invalid value "some": want none, latest or all`,
	},
	"testdata/shutdown.bad.yaml": {
		`testdata/shutdown.bad.yaml:2:22: worker.max_interruptions: must be 0 or more, got -1`,
		`testdata/shutdown.bad.yaml:6:18: jobs[0] "ping": on_shutdown: invalid value "wait": want requeue or cancel`,
	},
	"testdata/queue_limit.bad.yaml": {
		`testdata/queue_limit.bad.yaml:5:18: jobs[0] "queued": queue_limit: must be at least 1 with overlap: queue, got 0`,
		`testdata/queue_limit.bad.yaml:10:18: jobs[1] "skipper": queue_limit: must not be negative, got -1`,
	},
	"testdata/quote.bad.yaml": {
		`testdata/quote.bad.yaml:3:5: found unexpected end of stream`,
	},
	"testdata/resources.bad.yaml": {
		`testdata/resources.bad.yaml:4:11: resources[1].name: duplicate resource name "db" (first at line 2)`,
		`testdata/resources.bad.yaml:5:12: resources[1] "db": limit: must be at least 1, got 0`,
		`testdata/resources.bad.yaml:6:11: resources[2].name: invalid resource name "Big DB": want [a-z0-9][a-z0-9._-]{0,62}`,
		`testdata/resources.bad.yaml:8:5: resources[3] "cache": limit: required`,
	},
	"testdata/retries.bad.yaml": {
		`testdata/retries.bad.yaml:4:32: jobs[0] "flaky": retries.backoff: must be positive when max > 0, got 0s`,
		`testdata/retries.bad.yaml:9:20: jobs[1] "flakier": retries.max: must not be negative, got -1`,
		`testdata/retries.bad.yaml:9:51: jobs[1] "flakier": retries.max_backoff: must not be less than backoff (10s), got 5s`,
	},
	"testdata/session_ttl.bad.yaml": {
		`testdata/session_ttl.bad.yaml:2:16: cluster.session_ttl: must be at least 2s, got 1s`,
	},
	"testdata/session_ttl_frac.bad.yaml": {
		`testdata/session_ttl_frac.bad.yaml:2:16: cluster.session_ttl: must be a whole number of seconds, got 2.5s`,
	},
	"testdata/success_code.bad.yaml": {
		`testdata/success_code.bad.yaml:6:28: jobs[0] "ping": http.success_codes[1]: invalid code "2xy": want 100-599 or a class 1xx-5xx`,
		`testdata/success_code.bad.yaml:6:35: jobs[0] "ping": http.success_codes[2]: invalid code "600": want 100-599 or a class 1xx-5xx`,
	},
	"testdata/tabs.bad.yaml": {
		`testdata/tabs.bad.yaml:3:1: found a tab character: YAML indents with spaces only`,
	},
	"testdata/timezone.bad.yaml": {
		`testdata/timezone.bad.yaml:4:15: jobs[0] "lunar": timezone: unknown time zone "Mars/Base"`,
		`testdata/timezone.bad.yaml:9:15: jobs[1] "local": timezone: "Local" is not allowed: name the zone, e.g. "Europe/Berlin"`,
	},
	"testdata/type.bad.yaml": {
		`testdata/type.bad.yaml:2:17: worker.max_parallel: expected an integer, got "many"`,
		`testdata/type.bad.yaml:5:15: jobs[0] "ping": schedule: expected a string, got a list`,
		`testdata/type.bad.yaml:6:22: jobs[0] "ping": max_concurrency: expected an integer, got "2"`,
		`testdata/type.bad.yaml:7:13: jobs[0] "ping": paused: expected true or false, got "yes"`,
		`testdata/type.bad.yaml:8:11: jobs[0] "ping": http: expected a mapping, got "http://127.0.0.1:8080/healthz"`,
	},
	"testdata/unknown_field.bad.yaml": {
		`testdata/unknown_field.bad.yaml:1:1: unknown field "clusters"`,
		`testdata/unknown_field.bad.yaml:6:5: jobs[0] "ping": unknown field "retry"`,
		`testdata/unknown_field.bad.yaml:9:7: jobs[0] "ping": exec: unknown field "shell"`,
	},
	"testdata/unknown_resource.bad.yaml": {
		`testdata/unknown_resource.bad.yaml:7:29: jobs[0] "sync": resources[1]: unknown resource "gitlab-api": declare it under resources`,
		`testdata/unknown_resource.bad.yaml:7:41: jobs[0] "sync": resources[2]: resource "github-api" listed twice`,
	},
	"testdata/userinfo.bad.yaml": {
		`testdata/userinfo.bad.yaml:5:12: jobs[0] "hook": http.url: must not contain credentials (user:password@): send them in a header from headers_file, e.g. Authorization`,
		`testdata/userinfo.bad.yaml:9:12: jobs[1] "broken": http.url: invalid URL (not shown: it contains "@" and may hold credentials)`,
	},
	"testdata/url.bad.yaml": {
		`testdata/url.bad.yaml:5:12: jobs[0] "relative": http.url: must be an absolute http or https URL, got "example.com/hook"`,
		`testdata/url.bad.yaml:9:12: jobs[1] "ftp": http.url: must be an absolute http or https URL, got "ftp://example.com/hook"`,
		`testdata/url.bad.yaml:13:12: jobs[2] "nohost": http.url: missing host in "http:///hook"`,
		`testdata/url.bad.yaml:17:7: jobs[3] "nourl": http.url: required`,
	},
}

func TestBadFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := badFiles[f]; !ok {
			t.Errorf("%s has no expected problems in badFiles", f)
		}
	}
	for file, want := range badFiles {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := Load(file)
			if err == nil {
				t.Fatalf("no error; want:\n%s", strings.Join(want, "\n"))
			}
			if cfg != nil {
				t.Error("a Config came back with the error")
			}
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, want) {
				t.Errorf("got:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
			}
			if len(cerr.Problems) != len(want) {
				t.Errorf("%d problems, want %d", len(cerr.Problems), len(want))
			}
		})
	}
}

func TestEveryProblemAtOnce(t *testing.T) {
	_, err := Load("testdata/multi.bad.yaml")
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("error is %T: %v", err, err)
	}
	if len(cerr.Problems) < 10 {
		t.Errorf("only %d problems reported:\n%s", len(cerr.Problems), err)
	}
	for i := 1; i < len(cerr.Problems); i++ {
		a, b := cerr.Problems[i-1], cerr.Problems[i]
		if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
			t.Errorf("not in file order: %v before %v", a, b)
		}
	}
	p := cerr.Problems[0]
	want := Problem{File: "testdata/multi.bad.yaml", Line: 3, Col: 16, Path: "cluster.session_ttl", Message: "must be at least 2s, got 1s"}
	if p != want {
		t.Errorf("first problem = %+v, want %+v", p, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}

func TestExample(t *testing.T) {
	cfg, err := Load("example.yaml")
	if err != nil {
		t.Fatalf("example.yaml:\n%v", err)
	}
	if len(cfg.Cluster.Etcd.Endpoints) != 0 {
		t.Error("example must use the embedded etcd")
	}
	var http, exec, shared, queue bool
	for _, j := range cfg.Jobs {
		if j.HTTP != nil && strings.HasPrefix(j.HTTP.URL, "http://127.0.0.1:8080/") {
			http = true
		}
		if j.Exec != nil {
			exec = true
		}
		if len(j.Resources) > 0 && j.MaxConcurrency == 2 {
			shared = true
		}
		if j.Overlap == OverlapQueue {
			queue = true
		}
	}
	if !http || !exec || !shared || !queue {
		t.Errorf("example lacks a job kind: http=%v exec=%v shared-resource=%v queue=%v", http, exec, shared, queue)
	}
}
