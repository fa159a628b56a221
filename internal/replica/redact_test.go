package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// With reads open (protect_reads: false), the values of a job's headers
// and environment, inline or from files, are shown only to a reader with
// the token; names stay visible to everyone (docs/design-edges.md#operating-at-the-edges).
func TestSecretsRedactedWithoutToken(t *testing.T) {
	endpoint := newEtcd(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	headers := filepath.Join(dir, "headers.yaml")
	if err := os.WriteFile(headers, []byte("X-Api-Key: key-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(dir, "job.env")
	if err := os.WriteFile(env, []byte("JOB_DB_PASSWORD=pw-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobs.yaml")
	writeFile(t, path, etcdtest.Config(endpoint, "/redact/", fmt.Sprintf(`  token_file: %s
jobs:
  - name: call
    schedule: "0 0 1 1 *"
    http:
      url: http://127.0.0.1:1/
      headers: {Authorization: "Bearer inline-secret"}
      headers_file: %s
  - name: cmd
    schedule: "0 0 1 1 *"
    exec:
      command: ["true"]
      env: {INLINE_PASSWORD: inline-pw}
      env_file: %s
`, tokenFile, headers, env)))
	r := startReplica(t, "a1", path, noWatch)
	secrets := []string{"inline-secret", "key-from-file", "pw-from-file", "inline-pw"}
	names := []string{"Authorization", "X-Api-Key", "JOB_DB_PASSWORD", "INLINE_PASSWORD"}
	ctx := context.Background()

	anon, err := r.api.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one, err := r.api.Job(ctx, "call")
	if err != nil {
		t.Fatal(err)
	}
	seen := string(one.Raw)
	for _, j := range anon {
		seen += string(j.Raw)
	}
	for _, s := range secrets {
		if strings.Contains(seen, s) {
			t.Errorf("a reader without the token saw %q", s)
		}
	}
	// "<redacted>", as JSON writes it.
	for _, n := range append(names, `\u003credacted\u003e`) {
		if !strings.Contains(seen, n) {
			t.Errorf("a reader without the token did not see %q", n)
		}
	}

	withToken, err := r.client("s3cret-token").Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen = ""
	for _, j := range withToken {
		seen += string(j.Raw)
	}
	for _, s := range secrets {
		if !strings.Contains(seen, s) {
			t.Errorf("a reader with the token did not see %q", s)
		}
	}
}
