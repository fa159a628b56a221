package replica

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// authConfig is a config with a token file and protect_reads as given.
func authConfig(endpoint, prefix, tokenFile string, protectReads bool) string {
	return etcdtest.Config(endpoint, prefix, fmt.Sprintf(`  token_file: %s
  protect_reads: %t
`, tokenFile, protectReads)+echoJob)
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

	ctx := context.Background()
	// The POST endpoints, with the answer a valid token gets (0: 2xx).
	posts := []struct {
		name string
		call func(*client.Client) error
		ok   int
	}{
		{"pause", func(c *client.Client) error { _, err := c.Pause(ctx, "echo", client.PauseOptions{}); return err }, 0},
		{"resume", func(c *client.Client) error { _, err := c.Resume(ctx, "echo"); return err }, 0},
		{"trigger", func(c *client.Client) error { _, err := c.Trigger(ctx, "echo", nil, ""); return err }, 0},
		{"cancel", func(c *client.Client) error { _, err := c.Cancel(ctx, runID, ""); return err }, http.StatusConflict}, // finished: past auth
	}
	reads := []struct {
		name string
		call func(*client.Client) error
	}{
		{"status", func(c *client.Client) error { _, err := c.Status(ctx); return err }},
		{"leader", func(c *client.Client) error { _, err := c.Leader(ctx); return err }},
		{"members", func(c *client.Client) error { _, err := c.Members(ctx); return err }},
		{"slots", func(c *client.Client) error { _, err := c.Slots(ctx); return err }},
		{"jobs", func(c *client.Client) error { _, err := c.Jobs(ctx); return err }},
		{"job", func(c *client.Client) error { _, err := c.Job(ctx, "echo"); return err }},
		{"runs", func(c *client.Client) error { _, err := c.Runs(ctx, "echo", 0, ""); return err }},
		{"run", func(c *client.Client) error { _, err := c.Run(ctx, runID); return err }},
		{"metrics", func(c *client.Client) error { _, err := c.Metrics(ctx); return err }},
	}
	probes := []struct {
		name string
		call func(*client.Client) error
	}{
		{"healthz", func(c *client.Client) error { return c.Healthy(ctx) }},
		{"readyz", func(c *client.Client) error { return c.Ready(ctx) }},
	}

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
				if err := p.call(r.client(tc.token)); statusOf(err) != tc.want {
					t.Errorf("POST %s with %s: %v, want %d", p.name, tc.name, err, tc.want)
				}
			}
		}
		wantOpen := 0
		if protectReads {
			wantOpen = http.StatusUnauthorized
		}
		for _, p := range reads {
			if err := p.call(r.client("")); statusOf(err) != wantOpen {
				t.Errorf("GET %s without token (protect_reads %t): %v, want %d", p.name, protectReads, err, wantOpen)
			}
			if err := p.call(r.client(wrong)); statusOf(err) != wantOpen {
				t.Errorf("GET %s with wrong token (protect_reads %t): %v, want %d", p.name, protectReads, err, wantOpen)
			}
			if err := p.call(r.client(good)); err != nil {
				t.Errorf("GET %s with right token: %v", p.name, err)
			}
		}
		for _, p := range probes {
			if err := p.call(r.client("")); err != nil {
				t.Errorf("probe %s without token (protect_reads %t): %v", p.name, protectReads, err)
			}
		}
	}
	t.Run("reads open", func(t *testing.T) { check(t, false) })

	// protect_reads on through a reload.
	writeFile(t, path, authConfig(endpoint, "/auth/", tokenFile, true))
	r.sighup()
	poll.Until(t, 10*time.Second, "protect_reads reloaded", func() (bool, string) {
		_, err := r.api.Jobs(ctx)
		return statusOf(err) == http.StatusUnauthorized, fmt.Sprint(err)
	})
	t.Run("reads protected", func(t *testing.T) { check(t, true) })

	// A new token: the old one stops working, the new one works.
	if err := os.WriteFile(tokenFile, []byte("rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.sighup()
	poll.Until(t, 10*time.Second, "token re-read on reload", func() (bool, string) {
		_, err := r.client("rotated").Pause(ctx, "echo", client.PauseOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := r.client(good).Resume(ctx, "echo"); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %v, want 401", err)
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
	if _, err := r.api.Resume(ctx, "echo"); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("no token after an empty token file: %v, want 401", err)
	}
	if _, err := r.client("rotated").Resume(ctx, "echo"); err != nil {
		t.Errorf("rotated token after an empty token file: %v, want 200", err)
	}
}

// statusOf is the HTTP status of a failed call, 0 for a call that
// succeeded, -1 for one that got no answer.
func statusOf(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := client.AsError(err); ok {
		return e.Status
	}
	return -1
}
