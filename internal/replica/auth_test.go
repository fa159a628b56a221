package replica

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
)

// authConfig is a config with a token file and protect_reads as given.
func authConfig(endpoint, prefix, tokenFile string, protectReads bool) string {
	return configYAML(endpoint, prefix, fmt.Sprintf(`  token_file: %s
  protect_reads: %t
jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["echo", "hello"]
`, tokenFile, protectReads))
}

// With api.token_file every mutating endpoint needs the bearer token; reads
// need it only with protect_reads; the probes never do, since a kubelet
// sends none. A reload re-reads the token and protect_reads.
func TestAuth(t *testing.T) {
	endpoint := newEtcd(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobs.yaml")
	writeFile(t, path, authConfig(endpoint, "/auth/", tokenFile, false))
	r := startReplica(t, "a1", path, noWatch)

	const good, wrong = "s3cret-token", "s3cret-tokem"
	// A run to cancel: its id is known whatever happens to it.
	runID := r.trigger("echo", good)
	r.waitRun(runID, "finished", 20*time.Second)

	// The POST endpoints, with the answer a valid token gets.
	posts := []struct {
		path string
		ok   int
	}{
		{"/api/v1/jobs/echo/pause", http.StatusOK},
		{"/api/v1/jobs/echo/resume", http.StatusOK},
		{"/api/v1/jobs/echo/trigger", http.StatusAccepted},
		{"/api/v1/runs/" + runID + "/cancel", http.StatusConflict}, // finished: past auth
	}
	reads := []string{
		"/api/v1/status", "/api/v1/leader", "/api/v1/members", "/api/v1/slots",
		"/api/v1/jobs", "/api/v1/jobs/echo", "/api/v1/jobs/echo/runs", "/api/v1/runs/" + runID, "/metrics",
	}
	probes := []string{"/healthz", "/readyz"}

	check := func(t *testing.T, protectReads bool) {
		for _, p := range posts {
			for _, tc := range []struct {
				name, token string
				want        int
			}{
				{"no token", "", http.StatusUnauthorized},
				{"wrong token", wrong, http.StatusUnauthorized},
				{"right token", good, p.ok},
			} {
				if code, body := r.do(http.MethodPost, p.path, tc.token); code != tc.want {
					t.Errorf("POST %s with %s: %d %s, want %d", p.path, tc.name, code, body, tc.want)
				}
			}
		}
		wantOpen := http.StatusOK
		if protectReads {
			wantOpen = http.StatusUnauthorized
		}
		for _, p := range reads {
			if code, body := r.get(p, ""); code != wantOpen {
				t.Errorf("GET %s without token (protect_reads %t): %d %s, want %d", p, protectReads, code, body, wantOpen)
			}
			if code, body := r.get(p, wrong); code != wantOpen {
				t.Errorf("GET %s with wrong token (protect_reads %t): %d %s, want %d", p, protectReads, code, body, wantOpen)
			}
			if code, body := r.get(p, good); code != http.StatusOK {
				t.Errorf("GET %s with right token: %d %s", p, code, body)
			}
		}
		for _, p := range probes {
			if code, body := r.get(p, ""); code != http.StatusOK {
				t.Errorf("probe %s without token (protect_reads %t): %d %s", p, protectReads, code, body)
			}
		}
	}
	t.Run("reads open", func(t *testing.T) { check(t, false) })

	// protect_reads on through a reload.
	writeFile(t, path, authConfig(endpoint, "/auth/", tokenFile, true))
	r.sighup()
	poll.Until(t, 10*time.Second, "protect_reads reloaded", func() (bool, string) {
		code, _ := r.get("/api/v1/jobs", "")
		return code == http.StatusUnauthorized, fmt.Sprint(code)
	})
	t.Run("reads protected", func(t *testing.T) { check(t, true) })

	// A new token: the old one stops working, the new one works.
	if err := os.WriteFile(tokenFile, []byte("rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.sighup()
	poll.Until(t, 10*time.Second, "token re-read on reload", func() (bool, string) {
		code, _ := r.do(http.MethodPost, "/api/v1/jobs/echo/pause", "rotated")
		return code == http.StatusOK, fmt.Sprint(code)
	})
	if code, _ := r.do(http.MethodPost, "/api/v1/jobs/echo/resume", good); code != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %d, want 401", code)
	}

	// An empty token file is refused and the rotated token stays: a broken
	// secret must not open the API.
	if err := os.WriteFile(tokenFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.sighup()
	poll.Until(t, 10*time.Second, "empty token refused", func() (bool, string) {
		st := r.statusWith("rotated")
		return st.LastReloadError != "", st.LastReloadError
	})
	if code, _ := r.do(http.MethodPost, "/api/v1/jobs/echo/resume", ""); code != http.StatusUnauthorized {
		t.Errorf("no token after an empty token file: %d, want 401", code)
	}
	if code, _ := r.do(http.MethodPost, "/api/v1/jobs/echo/resume", "rotated"); code != http.StatusOK {
		t.Errorf("rotated token after an empty token file: %d, want 200", code)
	}
}
