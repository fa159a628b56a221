package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// errorJobs: keyed takes its concurrency key from the trigger's input.
const errorJobs = `jobs:
  - name: keyed
    schedule: "@manually"
    concurrency_key: "{{ .Input.k }}"
    max_concurrency: 1
    overlap: queue
    queue_limit: 10
    exec:
      command: ["true"]
  - name: ok
    schedule: "@manually"
    exec:
      command: ["true"]
  - name: hourly
    schedule: "0 * * * *"
    catch_up: none
    exec:
      command: ["true"]
`

// rePackageChain finds a Go package's prefix at the start of a message or
// of a part of one ("jobs: bad concurrency key: queue: job keyed: ...").
var rePackageChain = regexp.MustCompile(`(^|: )(api|client|config|jobs|queue|runs|slots|keys|scheduler|template|json|etcdserver|replica|engine|http|url): ` +
	`|\b[a-z]+: [a-z]+: [a-z]+: `)

// goPhrases are Go runtime and standard library wording a user cannot act on.
var goPhrases = []string{
	"nil pointer", "invalid character", "map has no entry", "interface {}", `executing "`,
	"cannot unmarshal", "Go struct field", "unexpected end of JSON input", "context deadline exceeded",
	"<no value>", "dial tcp",
}

// forPeople fails the test when msg reads as a chain of package prefixes
// or quotes Go's own wording instead of saying what the user did.
func forPeople(t *testing.T, what, msg string) {
	t.Helper()
	for _, why := range notForPeople(msg) {
		t.Errorf("%s: %q %s", what, msg, why)
	}
}

// notForPeople says what in msg is not written for people.
func notForPeople(msg string) []string {
	var out []string
	if m := rePackageChain.FindString(msg); m != "" {
		out = append(out, fmt.Sprintf("has a package prefix chain (%q)", m))
	}
	for _, p := range goPhrases {
		if strings.Contains(msg, p) {
			out = append(out, fmt.Sprintf("has Go's wording %q", p))
		}
	}
	return out
}

// The check catches what users met before (issue 25, item 8) and lets
// the messages that replaced them through.
func TestNotForPeople(t *testing.T) {
	for _, msg := range []string{
		`jobs: bad concurrency key: queue: job keyed: config: bad concurrency key: template: concurrency_key:1:9: executing "concurrency_key" at <.Input.k>: map has no entry for key "k"`,
		`job keyed: config: bad concurrency key: template: concurrency_key:1:9: executing "concurrency_key" at <.Input.k>: nil pointer evaluating interface {}.k`,
		`jobs: run already finished: ok@1 ended succeeded`,
		`--input must be a JSON object: invalid character 'o' in literal null (expecting 'u')`,
		`the body must be JSON like {"reason": "..."}: json: cannot unmarshal number into Go struct field .reason of type string`,
		`no answer from http://127.0.0.1:1: Get "http://127.0.0.1:1/api/v1/jobs": dial tcp 127.0.0.1:1: connect: connection refused`,
	} {
		if len(notForPeople(msg)) == 0 {
			t.Errorf("%q passes the check", msg)
		}
	}
	for _, msg := range []string{
		`job "keyed": input has no "k", which concurrency_key "{{ .Input.k }}" needs: add "k" to the input`,
		`run "ok@1" already finished (succeeded); there is nothing to cancel`,
		`11:15: jobs[0] "report": schedule: expected 5 or 6 fields, got 4`,
		`--input is not valid JSON: it stops making sense at character 2; give a JSON object, e.g. --input '{"k": "v"}'`,
	} {
		if why := notForPeople(msg); len(why) > 0 {
			t.Errorf("%q fails the check: %v", msg, why)
		}
	}
}

// apiCase is a request a user might send and the refusal it must get.
type apiCase struct {
	name, method, path, body string
	status                   int
	code                     string
	want                     []string // each must appear in the message
}

// apiCases refuse things on errorJobs; done is a finished run of "ok".
func apiCases(done string) []apiCase {
	return []apiCase{
		{"key missing from input", "POST", "/api/v1/jobs/keyed/trigger", `{"input": {"n": 1}}`,
			400, "bad_concurrency_key", []string{`job "keyed"`, `input has no "k"`, `concurrency_key "{{ .Input.k }}"`}},
		{"no input at all", "POST", "/api/v1/jobs/keyed/trigger", ``,
			400, "bad_concurrency_key", []string{`job "keyed"`, `no input`, `"k"`}},
		{"key outside the pattern", "POST", "/api/v1/jobs/keyed/trigger", `{"input": {"k": "a/b"}}`,
			400, "bad_concurrency_key", []string{`job "keyed"`, `"a/b"`}},
		{"body not JSON", "POST", "/api/v1/jobs/ok/trigger", `{not json}`,
			400, "bad_body", []string{"not valid JSON"}},
		{"body cut short", "POST", "/api/v1/jobs/ok/trigger", `{"input": {"k": `,
			400, "bad_body", []string{"not valid JSON"}},
		{"unknown field", "POST", "/api/v1/jobs/ok/trigger", `{"inptu": {}}`,
			400, "bad_body", []string{`"inptu"`}},
		{"wrong type", "POST", "/api/v1/jobs/ok/trigger", `{"idempotency_key": 5}`,
			400, "bad_body", []string{`idempotency_key`, "string"}},
		{"input not an object", "POST", "/api/v1/jobs/ok/trigger", `{"input": [1, 2]}`,
			400, "bad_input", []string{"input must be a JSON object", "[1, 2]"}},
		{"cancel reason wrong type", "POST", "/api/v1/runs/" + done + "/cancel", `{"reason": 5}`,
			400, "bad_body", []string{"reason", "string"}},
		{"cancel a finished run", "POST", "/api/v1/runs/" + done + "/cancel", ``,
			409, "run_finished", []string{`run "` + done + `"`, "succeeded"}},
		{"unknown job", "GET", "/api/v1/jobs/nope", ``,
			404, "unknown_job", []string{`no job "nope"`, "scheduler jobs lists the jobs", "scheduler jobs --removed"}},
		{"mistyped job", "GET", "/api/v1/jobs/huorly", ``,
			404, "unknown_job", []string{`no job "huorly"`, `did you mean "hourly"?`}},
		{"trigger a mistyped job", "POST", "/api/v1/jobs/kyed/trigger", ``,
			404, "unknown_job", []string{`no job "kyed"`, `did you mean "keyed"?`}},

		{"unknown run", "GET", "/api/v1/runs/nope@1", ``,
			404, "unknown_run", []string{`"nope@1"`}},
		{"page from an unknown run", "GET", "/api/v1/jobs/ok/runs?before=ok@nope", ``,
			404, "unknown_run", []string{`"ok@nope"`, `job "ok"`}},
		{"backfill into the future", "POST", "/api/v1/jobs/hourly/backfill", `{"from": "2026-01-01T00:00:00Z", "to": "2999-01-01T00:00:00Z"}`,
			400, "bad_range", []string{`job "hourly"`, "to 2999-01-01T00:00:00Z is in the future", "future ones are the schedule's"}},
		{"backfill from after to", "POST", "/api/v1/jobs/hourly/backfill", `{"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}`,
			400, "bad_range", []string{`job "hourly"`, "from 2026-01-02T00:00:00Z is not before to 2026-01-01T00:00:00Z"}},
		{"backfill of too many ticks", "POST", "/api/v1/jobs/hourly/backfill", `{"from": "2020-01-01T00:00:00Z", "to": "2025-01-01T00:00:00Z"}`,
			400, "too_many_ticks", []string{`job "hourly"`, "more than 10000 ticks", "at most 10000 a request, e.g. to 2021-02-20T16:00:00Z"}},
		{"backfill without to", "POST", "/api/v1/jobs/hourly/backfill", `{"from": "2026-01-01T00:00:00Z"}`,
			400, "bad_body", []string{"to is missing", `"from"`}},
		{"backfill from not a time", "POST", "/api/v1/jobs/hourly/backfill", `{"from": "yesterday", "to": "2026-01-01T00:00:00Z"}`,
			400, "bad_body", []string{`from "yesterday" is not an RFC 3339 time`}},
		{"backfill an unknown job", "POST", "/api/v1/jobs/nope/backfill", `{"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}`,
			404, "unknown_job", []string{`"nope"`}},
	}
}

// authCase is an apiCase sent with the Authorization header auth (the
// other cases send the cluster's token).
type authCase struct {
	apiCase
	auth string
}

var authCases = []authCase{
	{apiCase{"write without the token", "POST", "/api/v1/jobs/ok/pause", ``,
		401, "unauthorized", []string{"this request needs the API token", "Authorization: Bearer"}}, ""},
	{apiCase{"write with a wrong token", "POST", "/api/v1/jobs/ok/pause", ``,
		401, "unauthorized", []string{"the bearer token was refused", "api.token_file"}}, "Bearer not-the-token"},
}

// cliCase is a command line a user might type and how it must fail.
type cliCase struct {
	name string
	args []string
	code int
	want []string // each must appear on stderr
}

// cliCases fail on errorJobs at server; done is a finished run of "ok",
// bad a config file with badConfig, good one with errorJobs, wrong a token
// file the cluster does not take and closed a URL nobody listens at.
func cliCases(server, token, done, bad, good, wrong, closed string) []cliCase {
	srv := []string{"--server", server, "--token-file", token}
	return []cliCase{
		{"trigger without the key's input", append([]string{"trigger", "keyed"}, srv...),
			1, []string{`job "keyed"`, `"k"`}},
		{"trigger with a key outside the pattern", append([]string{"trigger", "keyed", "--input", `{"k": "a b"}`}, srv...),
			1, []string{`job "keyed"`, `"a b"`}},
		{"--input not JSON", append([]string{"trigger", "keyed", "--input", "not json"}, srv...),
			2, []string{"--input", "not valid JSON"}},
		{"--input cut short", append([]string{"trigger", "keyed", "--input", `{"k": `}, srv...),
			2, []string{"--input", "not valid JSON"}},
		{"cancel a finished run", append([]string{"cancel", done}, srv...),
			1, []string{`run "` + done + `"`, "succeeded"}},
		{"runs before an unknown run", append([]string{"runs", "ok", "--before", "ok@nope"}, srv...),
			1, []string{`"ok@nope"`}},
		{"backfill into the future", append([]string{"backfill", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2999-01-01T00:00:00Z"}, srv...),
			1, []string{`job "hourly"`, "is in the future", "backfill is for past ticks"}},
		{"backfill without --from", append([]string{"backfill", "hourly", "--to", "2026-01-01T00:00:00Z"}, srv...),
			2, []string{"--from is required"}},
		{"backfill --to not a time", append([]string{"backfill", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "tomorrow"}, srv...),
			2, []string{`--to "tomorrow" is not an RFC 3339 time`}},
		{"no server there", []string{"jobs", "--server", closed},
			1, []string{"no answer from", "nothing listens there"}},
		{"jobs of a mistyped job", append([]string{"jobs", "huorly"}, srv...),
			1, []string{`no job "huorly"`, `did you mean "hourly"?`}},
		{"runs of a job that never was", append([]string{"runs", "nope"}, srv...),
			1, []string{`no job "nope"`, "scheduler jobs --removed"}},
		{"a token file that is not there", []string{"pause", "ok", "--server", server, "--token-file", "/nonexistent"},
			2, []string{"--token-file /nonexistent: no such file", "name the file that holds the API token"}},
		{"a write without a token", []string{"pause", "ok", "--server", server},
			1, []string{"this request needs the API token", "pass the API token with --token-file"}},
		{"a write with a wrong token", []string{"pause", "ok", "--server", server, "--token-file", wrong},
			1, []string{"the bearer token was refused", "the token was read from --token-file " + wrong}},
		{"next of a mistyped job", []string{"next", "--config", good, "huorly"},
			1, []string{`no job "huorly": did you mean "hourly"?`}},
		{"validate a file that is not there", []string{"validate", "--config", bad + ".missing"},
			2, []string{"cannot read the config file " + bad + ".missing"}},
		{"validate names the job", []string{"validate", "--config", bad},
			1, []string{`jobs[1] "report": schedule:`, `jobs[1] "report": input: has no "k"`}},
	}
}

// badConfig has a bad schedule and a default input without the key's field.
const badConfig = `jobs:
  - name: ok
    schedule: "@manually"
    exec: {command: ["true"]}
  - name: report
    schedule: "0 25 * * *"
    concurrency_key: "{{ .Input.k }}"
    input: {n: 1}
    exec: {command: ["true"]}
`

// Every message a user meets when the API or the CLI refuses something
// names the job, field or run and says what is wrong in the user's words:
// a real replica on a real etcd, asked over HTTP and through the CLI.
func TestErrorsForPeople(t *testing.T) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	token, wrong := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	for file, tok := range map[string]string{token: "errors-token\n", wrong: "not-the-token\n"} {
		if err := os.WriteFile(file, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := writeConfig(t, etcd.Endpoints()[0], "/errors/", "  token_file: "+token+"\n"+errorJobs)
	p := startProc(t, "a", good)
	p.waitLeader("a")
	var err error
	if p.api, err = client.New(p.url, client.WithToken("errors-token")); err != nil {
		t.Fatal(err)
	}
	done := p.trigger("ok")
	if _, err := p.api.Wait(context.Background(), done, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(badConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range apiCases(done) {
		t.Run("api/"+tc.name, func(t *testing.T) { checkAPI(t, p.url, tc, "Bearer errors-token") })
	}
	for _, tc := range authCases {
		t.Run("api/"+tc.name, func(t *testing.T) { checkAPI(t, p.url, tc.apiCase, tc.auth) })
	}
	for _, tc := range cliCases(p.url, token, done, bad, good, wrong, closedURL(t)) {
		t.Run("cli/"+tc.name, func(t *testing.T) { checkCLI(t, tc, bad) })
	}
}

// checkAPI sends tc's request, with the Authorization header auth, and
// checks the error answer.
func checkAPI(t *testing.T, server string, tc apiCase, auth string) {
	req, err := http.NewRequest(tc.method, server+tc.path, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || res.StatusCode != tc.status || e.Error.Code != tc.code {
		t.Fatalf("HTTP %d %s, want %d %s", res.StatusCode, b, tc.status, tc.code)
	}
	for _, w := range tc.want {
		if !strings.Contains(e.Error.Message, w) {
			t.Errorf("message %q does not say %q", e.Error.Message, w)
		}
	}
	forPeople(t, tc.name, e.Error.Message)
}

// checkCLI runs tc's command line and checks its exit code and stderr.
func checkCLI(t *testing.T, tc cliCase, bad string) {
	var errOut string
	var code int
	if tc.args[0] == "validate" {
		_, errOut, code = runBinary(t, tc.args...)
	} else {
		_, errOut, code = cli(t, tc.args...)
	}
	if code != tc.code {
		t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errOut)
	}
	for _, w := range tc.want {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q does not say %q", errOut, w)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		// "scheduler: " names the program, as grep's "grep: " does.
		line = strings.TrimPrefix(line, "scheduler: ")
		line = strings.TrimPrefix(line, bad+":")
		forPeople(t, tc.name, line)
	}
}
