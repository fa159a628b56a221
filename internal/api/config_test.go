package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/wire"
)

// configWithSecrets is a config whose every kind of secret holds a value
// the answers must never show.
const configWithSecrets = `
cluster:
  etcd:
    endpoints: ["http://10.0.0.1:2379"]
    username: root
    password_file: /run/secrets/etcd
  data_dir: /var/lib/private-data-dir
api:
  listen: 127.0.0.1:9999
  token_file: TOKEN
worker: {max_parallel: 7}
notify:
  sinks:
    - {name: ops, url: "http://hooks.example/ops", headers_file: sink-headers.yaml}
jobs:
  - name: report
    schedule: "0 2 * * *"
    http:
      url: http://example.internal/report
      headers: {Authorization: "Bearer inline-secret-1"}
      headers_file: headers.yaml
  - name: sweep
    schedule: "@every 30s"
    exec: {command: [/bin/true], env: {PASSWORD: env-secret-2}}
`

func configServer(t *testing.T) (*httptest.Server, Applied) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"headers.yaml":      "X-Api-Key: file-secret-3\n",
		"sink-headers.yaml": "X-Hook: sink-secret-4\n",
		"token":             "the-api-token\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "config.yaml")
	text := strings.Replace(configWithSecrets, "TOKEN", filepath.Join(dir, "token"), 1)
	cfg, err := config.Parse(path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	a := Applied{Config: cfg, Hash: cfg.Hash(), AppliedAt: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	s, err := New(Options{Listen: "127.0.0.1:0", TokenFile: filepath.Join(dir, "token"), Config: func() Applied { return a }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, a
}

var secretValues = []string{"inline-secret-1", "env-secret-2", "file-secret-3", "sink-secret-4", "the-api-token",
	"/run/secrets/etcd", "10.0.0.1", "private-data-dir", "9999"}

func getConfig(t *testing.T, ts *httptest.Server, accept, token string) answer {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/config", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}
}

func TestConfigAnswersWithoutSecrets(t *testing.T) {
	ts, applied := configServer(t)
	for _, tc := range []struct{ accept, token, ctype string }{
		{"", "", "application/yaml"},
		{"application/yaml", "the-api-token", "application/yaml"},
		{"application/json", "", "application/json"},
		{"application/json", "the-api-token", "application/json"},
	} {
		a := getConfig(t, ts, tc.accept, tc.token)
		if a.status != http.StatusOK || a.header.Get("Content-Type") != tc.ctype {
			t.Fatalf("Accept %q: %d %s\n%s", tc.accept, a.status, a.header.Get("Content-Type"), a.body)
		}
		if got := a.header.Get(HeaderConfigHash); got != applied.Hash {
			t.Errorf("hash header %q, want %q", got, applied.Hash)
		}
		if got := a.header.Get(HeaderAppliedAt); got != "2026-11-28T09:00:00Z" {
			t.Errorf("applied-at header %q", got)
		}
		for _, s := range secretValues {
			if strings.Contains(string(a.body), s) {
				t.Errorf("Accept %q token %v: the answer shows %q:\n%s", tc.accept, tc.token != "", s, a.body)
			}
		}
	}
	// The YAML holds the config's fields, defaults filled in.
	y := getConfig(t, ts, "", "")
	var back config.Public
	dec := yaml.NewDecoder(bytes.NewReader(y.body))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("the YAML answer: %v\n%s", err, y.body)
	}
	j := back.Config().Job("report")
	if j == nil || j.Timeout.D() != time.Hour || j.HTTP.Headers["Authorization"] != config.RedactedValue || back.Cluster.Etcd.Prefix != "/scheduler/" {
		t.Errorf("report as answered: %+v", j)
	}
}

func TestConfigFingerprintsOnlyWithToken(t *testing.T) {
	ts, applied := configServer(t)
	var open, withToken wire.Config
	for _, x := range []struct {
		token string
		into  *wire.Config
	}{{"", &open}, {"the-api-token", &withToken}} {
		a := getConfig(t, ts, "application/json", x.token)
		if err := json.Unmarshal(a.body, x.into); err != nil {
			t.Fatal(err)
		}
	}
	if open.ConfigHash != applied.Hash || len(open.Config.Jobs) != 2 || open.Secrets != nil {
		t.Errorf("without the token: hash %q, %d jobs, secrets %v", open.ConfigHash, len(open.Config.Jobs), open.Secrets)
	}
	want := applied.Config.SecretFingerprints([]byte("the-api-token"))
	if len(want) != 4 || len(withToken.Secrets) != 4 {
		t.Fatalf("fingerprints %v, want %v", withToken.Secrets, want)
	}
	for path, fp := range want {
		if withToken.Secrets[path] != fp {
			t.Errorf("%s: %q, want %q", path, withToken.Secrets[path], fp)
		}
	}
	if _, ok := want["notify.sinks.ops.headers.X-Hook"]; !ok {
		t.Errorf("no fingerprint of the sink's header: %v", want)
	}
}

// A token holder is told there are no secrets ({}), not nothing (null):
// diff then knows the secrets were compared.
func TestConfigNoSecretsIsEmptyNotNull(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("c.yaml", []byte("jobs:\n  - {name: a, schedule: \"@hourly\", exec: {command: [x]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Listen: "127.0.0.1:0", TokenFile: token,
		Config: func() Applied { return Applied{Config: cfg, Hash: cfg.Hash()} }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for token, want := range map[string]string{"tok": `"secrets": {}`, "": `"secrets": null`} {
		if a := getConfig(t, ts, "application/json", token); !strings.Contains(string(a.body), want) {
			t.Errorf("token %q: want %s in\n%s", token, want, a.body)
		}
	}
}
