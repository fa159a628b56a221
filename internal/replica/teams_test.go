package replica

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// Token values of the team tests: long and unlike anything else, so that
// finding one in a log line or an answer can only be a leak.
const (
	adminSecret    = "adm-7c1f0e9a2b4d6e8f"
	paymentsSecret = "pay-3a5b7c9d1e2f4a6b"
	viewerSecret   = "view-9e8d7c6b5a4f3e2d"
	wrongSecret    = "pay-3a5b7c9d1e2f4a6c"
)

// teamsCluster writes a main file with the admin token, a payments-ci
// token (payments only; read, trigger, pause, cancel) and a viewer token
// (every team, read), one job of its own and one team file each for
// payments and search.
func teamsCluster(t *testing.T, endpoint, prefix string, protectReads bool) (dir, path string) {
	t.Helper()
	return teamsClusterRunning(t, endpoint, prefix, protectReads, "true")
}

// teamsClusterRunning is teamsCluster whose jobs run command.
func teamsClusterRunning(t *testing.T, endpoint, prefix string, protectReads bool, command string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	for name, secret := range map[string]string{"admin": adminSecret, "payments-ci": paymentsSecret, "viewer": viewerSecret} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "teams"), 0o755); err != nil {
		t.Fatal(err)
	}
	job := func(name string) string {
		return fmt.Sprintf("  - name: %s\n    schedule: \"0 0 1 1 *\"\n    catch_up: none\n    exec:\n      command: [%s]\n", name, command)
	}
	writeFile(t, filepath.Join(dir, "teams", "payments.yaml"), "team: payments\njobs:\n"+job("settle"))
	writeFile(t, filepath.Join(dir, "teams", "search.yaml"), "team: search\njobs:\n"+job("reindex"))
	path = filepath.Join(dir, "config.yaml")
	writeFile(t, path, teamsConfig(endpoint, prefix, dir, protectReads)+"jobs:\n"+job("cleanup"))
	return dir, path
}

// With protect_reads a scoped token sees only the slots of its teams'
// runs (GET /api/v1/slots), and no removed job (its team went with its
// file); the admin token sees every slot.
func TestScopedTokenSeesItsTeamsSlots(t *testing.T) {
	endpoint := newEtcd(t)
	_, path := teamsClusterRunning(t, endpoint, "/teamslots/", false, `"sleep", "8"`)
	r := startReplica(t, "t1", path, noWatch)
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, strings.Replace(string(cfg), "protect_reads: false", "protect_reads: true", 1))
	r.sighup()
	poll.Until(t, 10*time.Second, "protect_reads applied", func() (bool, string) {
		code, _, body := call(t, r.url, "GET", "/api/v1/jobs", "", "")
		return code == http.StatusUnauthorized, body
	})
	for _, job := range []string{"settle", "reindex"} {
		if code, _, body := call(t, r.url, "POST", "/api/v1/jobs/"+job+"/trigger", adminSecret, ""); code != http.StatusAccepted && code != http.StatusOK {
			t.Fatalf("trigger %s: %d %s", job, code, body)
		}
	}
	slotsOf := func(token string) []string {
		code, _, body := call(t, r.url, "GET", "/api/v1/slots", token, "")
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/slots: %d %s", code, body)
		}
		var list []struct{ Job string }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		var jobs []string
		for _, s := range list {
			jobs = append(jobs, s.Job)
		}
		slices.Sort(jobs)
		return jobs
	}
	poll.Until(t, 30*time.Second, "both runs holding their slots", func() (bool, string) {
		got := slotsOf(adminSecret)
		return slices.Equal(got, []string{"reindex", "settle"}), fmt.Sprint(got)
	})
	if got := slotsOf(paymentsSecret); !slices.Equal(got, []string{"settle"}) {
		t.Errorf("payments-ci sees the slots of %v, want [settle]", got)
	}
	code, _, body := call(t, r.url, "GET", "/api/v1/jobs?removed=true", paymentsSecret, "")
	if code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("payments-ci's removed jobs: %d %s, want 200 []", code, body)
	}
}

func teamsConfig(endpoint, prefix, dir string, protectReads bool) string {
	return "include: [\"teams/*.yaml\"]\n" + etcdtest.Config(endpoint, prefix, fmt.Sprintf(`  token_file: %[1]s/admin
  protect_reads: %[2]t
  tokens:
    - {name: payments-ci, file: %[1]s/payments-ci, teams: [payments], allow: [read, trigger, pause, cancel]}
    - {name: viewer, file: %[1]s/viewer, teams: ["*"], allow: [read]}
`, dir, protectReads))
}

// call sends one request with a bearer token ("" none) and returns the
// status, the error code ("" on success) and the body.
func call(t *testing.T, base, method, path, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return res.StatusCode, e.Error.Code, string(b)
}

// The verb-by-team matrix (docs/configuration.md, "Teams and tokens"):
// every verb on a job of each team, sent with the admin token, a scoped
// token, a viewer token, a wrong token and none, against a real replica
// with protect_reads, each answered with its exact status and error code.
// No token value appears in any answer or log line.
func TestTeamTokenMatrix(t *testing.T) {
	endpoint := newEtcd(t)
	dir, path := teamsCluster(t, endpoint, "/teams/", false)
	r := startReplica(t, "t1", path, noWatch)
	// protect_reads on by reload: the harness waits for a leader without
	// a token. The reload also re-reads every token file.
	writeFile(t, path, teamsConfig(endpoint, "/teams/", dir, true)+"jobs:\n  - name: cleanup\n    schedule: \"0 0 1 1 *\"\n    catch_up: none\n    exec:\n      command: [\"true\"]\n")
	r.sighup()
	poll.Until(t, 10*time.Second, "protect_reads applied", func() (bool, string) {
		code, _, body := call(t, r.url, "GET", "/api/v1/jobs", "", "")
		return code == http.StatusUnauthorized, body
	})

	answers := runMatrix(t, r.url)
	answers = append(answers, checkLists(t, r.url)...)
	// The metric names tokens, never their values.
	_, _, metrics := call(t, r.url, "GET", "/metrics", adminSecret, "")
	for _, series := range []string{
		`scheduler_api_requests_total{code="403",token="payments-ci",verb="resume"} 3`,
		`scheduler_api_requests_total{code="202",token="payments-ci",verb="trigger"} 1`,
		`scheduler_api_requests_total{code="401",token="unknown",verb="trigger"} 3`,
		`scheduler_api_requests_total{code="401",token="none",verb="read"} `,
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics has no %s", series)
		}
	}
	// A mutation's log line names the token and the job.
	found := false
	for _, rec := range r.logs.Records() {
		if rec["msg"] == "api request" && rec["token"] == "payments-ci" && rec["verb"] == "trigger" && rec["job"] == "settle" {
			found = true
		}
	}
	if !found {
		t.Error("no log line names token payments-ci triggering settle")
	}
	noSecrets(t, r, append(answers, metrics))
}

// matrixTokens are the callers of the matrix, by their name in it.
var matrixTokens = map[string]string{"admin": adminSecret, "payments-ci": paymentsSecret, "viewer": viewerSecret, "wrong": wrongSecret, "none": ""}

// matrixVerb is one request of the matrix on a job.
type matrixVerb struct{ name, method, path, body string }

func matrixVerbs(job string) []matrixVerb {
	return []matrixVerb{
		{"read", "GET", "/api/v1/jobs/" + job, ""},
		{"runs", "GET", "/api/v1/jobs/" + job + "/runs", ""},
		{"pause", "POST", "/api/v1/jobs/" + job + "/pause", "{}"},
		{"resume", "POST", "/api/v1/jobs/" + job + "/resume", ""},
		{"trigger", "POST", "/api/v1/jobs/" + job + "/trigger", "{}"},
		{"cancel", "POST", "/api/v1/runs/" + job + "@manual-01JDZZZZZZZZZZZZZZZZZZZZZZ/cancel", ""},
		{"backfill", "POST", "/api/v1/jobs/" + job + "/backfill", `{"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}`},
	}
}

// matrixWant is the answer ("status" or "status code") a token gets for
// a verb on a job: payments-ci may read, trigger, pause and cancel the
// payments job; viewer may read everything; admin may do anything.
func matrixWant(tok, job, verb string) string {
	ok := map[string]string{"read": "200", "runs": "200", "pause": "200", "resume": "200", "trigger": "202",
		"cancel": "404 unknown_run", "backfill": "200"}
	switch {
	case tok == "admin":
	case tok == "wrong" || tok == "none":
		return "401 unauthorized"
	case tok == "viewer" && verb != "read" && verb != "runs":
		return "403 forbidden"
	case tok == "payments-ci" && (job != "settle" || verb == "resume" || verb == "backfill"):
		return "403 forbidden"
	}
	return ok[verb]
}

// runMatrix sends every verb on a job of each team with every token and
// checks each answer; it returns the bodies.
func runMatrix(t *testing.T, base string) []string {
	teamOf := map[string]string{"settle": `team \"payments\"`, "reindex": `team \"search\"`, "cleanup": `team \"\" (the main config file)`}
	var answers []string
	for _, tok := range []string{"admin", "payments-ci", "viewer", "wrong", "none"} {
		for _, job := range []string{"settle", "reindex", "cleanup"} {
			for _, v := range matrixVerbs(job) {
				code, ecode, body := call(t, base, v.method, v.path, matrixTokens[tok], v.body)
				answers = append(answers, body)
				got := fmt.Sprint(code)
				if code >= 300 || ecode != "" {
					got += " " + ecode
				}
				if w := matrixWant(tok, job, v.name); got != w {
					t.Errorf("%s %s on %s with %s token: %s, want %s; %.200s", v.method, v.path, job, tok, got, w, body)
				}
				if code == http.StatusForbidden && (!strings.Contains(body, `token \"`+tok+`\"`) || !strings.Contains(body, teamOf[job])) {
					t.Errorf("403 does not name the token and the job's team: %s", body)
				}
			}
		}
	}
	return answers
}

// checkLists: a scoped token lists only its teams' jobs; every job says
// its team. It returns the bodies.
func checkLists(t *testing.T, base string) []string {
	var answers []string
	listed := func(token string) []string {
		code, _, body := call(t, base, "GET", "/api/v1/jobs", token, "")
		answers = append(answers, body)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/jobs: %d %s", code, body)
		}
		var js []struct{ Name, Team string }
		if err := json.Unmarshal([]byte(body), &js); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range js {
			out = append(out, j.Name+"="+j.Team)
		}
		slices.Sort(out)
		return out
	}
	if got := listed(paymentsSecret); !slices.Equal(got, []string{"settle=payments"}) {
		t.Errorf("payments-ci lists %v, want [settle=payments]", got)
	}
	all := []string{"cleanup=", "reindex=search", "settle=payments"}
	if got := listed(viewerSecret); !slices.Equal(got, all) {
		t.Errorf("viewer lists %v, want %v", got, all)
	}
	if got := listed(adminSecret); !slices.Equal(got, all) {
		t.Errorf("admin lists %v, want %v", got, all)
	}
	return answers
}

// noSecrets fails when any token value appears in the answers, the log
// lines or the replica's status.
func noSecrets(t *testing.T, r *testReplica, answers []string) {
	t.Helper()
	var logs []string
	for _, rec := range r.logs.Records() {
		b, _ := json.Marshal(rec)
		logs = append(logs, string(b))
	}
	logs = append(logs, r.logs.Other()...)
	for _, secret := range []string{adminSecret, paymentsSecret, viewerSecret, wrongSecret} {
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("an answer holds a token: %.300s", a)
			}
		}
		for _, l := range logs {
			if strings.Contains(l, secret) {
				t.Errorf("a log line holds a token: %.300s", l)
			}
		}
	}
}

// Token files are read again on SIGHUP: a rotated token works at once,
// the old one no longer does, and a token file gone missing keeps the
// tokens as they were, with an error that names the token, not its value.
func TestTeamTokensRotateOnSIGHUP(t *testing.T) {
	endpoint := newEtcd(t)
	dir, path := teamsCluster(t, endpoint, "/rotate/", false)
	r := startReplica(t, "t2", path, noWatch)
	trigger := func(token string) int {
		code, _, _ := call(t, r.url, "POST", "/api/v1/jobs/settle/trigger", token, "{}")
		return code
	}
	if got := trigger(paymentsSecret); got != http.StatusAccepted {
		t.Fatalf("trigger with payments-ci: %d", got)
	}
	const rotated = "pay-rotated-0f1e2d3c4b5a"
	if err := os.WriteFile(filepath.Join(dir, "payments-ci"), []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	r.sighup()
	poll.Until(t, 10*time.Second, "rotated token accepted", func() (bool, string) {
		code := trigger(rotated)
		return code == http.StatusAccepted, fmt.Sprint(code)
	})
	if got := trigger(paymentsSecret); got != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %d, want 401", got)
	}
	if err := os.Remove(filepath.Join(dir, "viewer")); err != nil {
		t.Fatal(err)
	}
	r.sighup()
	poll.Until(t, 10*time.Second, "reload refused", func() (bool, string) {
		st := r.statusWith(adminSecret)
		return strings.Contains(st.LastReloadError, `token "viewer"`), st.LastReloadError
	})
	if got := trigger(rotated); got != http.StatusAccepted {
		t.Errorf("payments-ci after a refused reload: %d, want 202", got)
	}
	noSecrets(t, r, []string{r.statusWith(adminSecret).LastReloadError})
}

// A broken team file refuses the whole reload: every team keeps its last
// good jobs (the fixed file of another team waits too), and the status
// names the broken file and line. The status lists each file with its own
// hash.
func TestBrokenTeamFileKeepsLastGoodConfig(t *testing.T) {
	endpoint := newEtcd(t)
	dir, path := teamsCluster(t, endpoint, "/broken/", false)
	r := startReplica(t, "t3", path, noWatch)
	before := r.status()
	var files []string
	for _, f := range before.ConfigFiles {
		files = append(files, filepath.Base(f.Path)+"="+f.Team)
		if len(f.Hash) != 12 {
			t.Errorf("file %s: hash %q", f.Path, f.Hash)
		}
	}
	if want := []string{"config.yaml=", "payments.yaml=payments", "search.yaml=search"}; !slices.Equal(files, want) {
		t.Errorf("status files %v, want %v", files, want)
	}

	// payments adds a job, search breaks its file: neither applies.
	writeFile(t, filepath.Join(dir, "teams", "payments.yaml"), "team: payments\njobs:\n"+
		"  - name: settle\n    schedule: \"0 0 1 1 *\"\n    exec:\n      command: [\"true\"]\n"+
		"  - name: refund\n    schedule: \"0 0 1 1 *\"\n    exec:\n      command: [\"true\"]\n")
	writeFile(t, filepath.Join(dir, "teams", "search.yaml"), "team: search\njobs:\n  - name: reindex\n    schedule: \"every day\"\n    exec:\n      command: [\"true\"]\n")
	r.sighup()
	poll.Until(t, 10*time.Second, "reload refused", func() (bool, string) {
		st := r.status()
		return st.LastReloadError != "", st.LastReloadError
	})
	st := r.status()
	wantErr := filepath.Join(dir, "teams", "search.yaml") + `:4:15: jobs[0] "reindex": schedule: expected 5 or 6 fields, got 2`
	if st.LastReloadError != wantErr {
		t.Errorf("last reload error %q, want %q", st.LastReloadError, wantErr)
	}
	if st.ConfigHash != before.ConfigHash {
		t.Errorf("config hash %s after a refused reload, want %s", st.ConfigHash, before.ConfigHash)
	}
	if got := r.jobNames(); !slices.Equal(got, []string{"cleanup", "settle", "reindex"}) {
		t.Errorf("jobs after a refused reload: %v, want [cleanup settle reindex]", got)
	}
	if got := r.metric(`scheduler_config_reloads_total{result="error"}`); got != 1 {
		t.Errorf("reloads error = %v, want 1", got)
	}
}
