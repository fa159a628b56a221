package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The values of a job's headers and environment, inline or from
// headers_file and env_file, reach the target and never the replica's log
// (at debug level) or /metrics: not when the runs fail, not when a reload
// changes them, not when a reload is refused for a broken secrets file
// (docs/design-edges.md#operating-at-the-edges).
func TestSecretsNotInLogsOrMetrics(t *testing.T) {
	endpoint := newEtcd(t)
	dir := t.TempDir()

	// The HTTP target notes the secret headers it was sent and fails, so
	// the run's failure is logged.
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Authorization")+" "+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Error(w, "refused", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)

	headers := filepath.Join(dir, "headers.yaml")
	env := filepath.Join(dir, "job.env")
	path := filepath.Join(dir, "jobs.yaml")
	// secrets writes the config and its secrets files for generation gen
	// and returns the secret values.
	secrets := func(gen int) []string {
		s := []string{
			fmt.Sprintf("hdr-inline-sekrit-%d", gen), fmt.Sprintf("hdr-file-sekrit-%d", gen),
			fmt.Sprintf("env-inline-sekrit-%d", gen), fmt.Sprintf("env-file-sekrit-%d", gen),
		}
		writeFile(t, headers, "X-Api-Key: "+s[1]+"\n")
		writeFile(t, env, "JOB_DB_PASSWORD="+s[3]+"\n")
		// The command exits 3 when it was given both values, 1 when not.
		writeFile(t, path, etcdtest.Config(endpoint, "/secrets-logs/", fmt.Sprintf(`jobs:
  - name: call
    schedule: "0 0 1 1 *"
    http:
      url: %s/hook
      headers: {Authorization: "Bearer %s"}
      headers_file: %s
  - name: cmd
    schedule: "0 0 1 1 *"
    exec:
      command: ["sh", "-c", 'test "$INLINE_PASSWORD" = %s && test "$JOB_DB_PASSWORD" = %s && exit 3; exit 1']
      env: {INLINE_PASSWORD: %s}
      env_file: %s
`, srv.URL, s[0], headers, s[2], s[3], s[2], env)))
		return s
	}
	// runBoth runs each job once and checks the target got the secrets.
	runBoth := func(r *testReplica, s []string) {
		t.Helper()
		call := r.waitRun(r.trigger("call", ""), "finished", 30*time.Second)
		if call.Outcome != "failed" || call.HTTPStatus != http.StatusInternalServerError {
			t.Fatalf("call run: %s", call.Raw)
		}
		mu.Lock()
		last := sent[len(sent)-1]
		mu.Unlock()
		if want := "Bearer " + s[0] + " " + s[1]; last != want {
			t.Errorf("the target was sent %q, want %q", last, want)
		}
		cmd := r.waitRun(r.trigger("cmd", ""), "finished", 30*time.Second)
		if cmd.ExitCode == nil || *cmd.ExitCode != 3 {
			t.Errorf("cmd run did not get its environment (exit 3): %s", cmd.Raw)
		}
	}

	all := secrets(1)
	r := startReplica(t, "s1", path)
	runBoth(r, all)

	// A reload with new values.
	s2 := secrets(2)
	all = append(all, s2...)
	r.sighup()
	poll.Until(t, 30*time.Second, "the reload", func() (bool, string) {
		got := r.metric(`scheduler_config_reloads_total{result="success"}`)
		return got == 1, fmt.Sprintf("%v successful reloads", got)
	})
	runBoth(r, s2)

	// A reload refused because the headers file is a bare value, not a
	// mapping: the value is not quoted back.
	bare := "bare-hdr-sekrit-3"
	all = append(all, bare)
	writeFile(t, headers, bare+"\n")
	r.sighup()
	poll.Until(t, 30*time.Second, "the refused reload", func() (bool, string) {
		got := r.metric(`scheduler_config_reloads_total{result="error"}`)
		return got == 1, fmt.Sprintf("%v refused reloads", got)
	})

	metrics, err := r.api.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `scheduler_runs_total{job="cmd",outcome="failed",team=""} 2`) {
		t.Errorf("/metrics does not count the runs:\n%s", metrics)
	}
	logs := logText(t, r.logs)
	for _, want := range []string{"config reloaded", "config reload refused"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log has no %q line", want)
		}
	}
	for _, s := range all {
		if strings.Contains(logs, s) {
			t.Errorf("the log shows %q", s)
		}
		if strings.Contains(metrics, s) {
			t.Errorf("/metrics shows %q", s)
		}
	}
}

// logText is every log record so far, as JSON, one a line.
func logText(t *testing.T, s *logtest.Sink) string {
	t.Helper()
	var b strings.Builder
	for _, rec := range s.Records() {
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
