package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Values from headers_file and env_file join the inline ones, read
// relative to the config file's directory (the test runs in config/, the
// files are under testdata/secrets/).
func TestSecretsFromFiles(t *testing.T) {
	cfg, err := Load("testdata/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hook, report := cfg.Job("hook"), cfg.Job("report")
	wantHeaders := map[string]string{
		"X-Team":        "data",
		"Authorization": "Bearer s3cret-from-file",
		"X-Token":       "t0ken-from-file",
	}
	if !reflect.DeepEqual(hook.HTTP.Headers, wantHeaders) {
		t.Errorf("headers = %v, want %v", hook.HTTP.Headers, wantHeaders)
	}
	// Values are taken as written: no quote removal, "=" after the first
	// is part of the value, a CRLF line ending is not.
	wantEnv := map[string]string{"MODE": "full", "TOKEN": "abc-from-file", "PASSWORD": `p=ss "quoted"`}
	if !reflect.DeepEqual(report.Exec.Env, wantEnv) {
		t.Errorf("env = %q, want %q", report.Exec.Env, wantEnv)
	}

	// The queue entry carries the spec as JSON: the worker must get the
	// values, under the same keys as inline ones.
	b, err := json.Marshal(hook)
	if err != nil {
		t.Fatal(err)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.HTTP.Headers, wantHeaders) || back.HTTP.HeadersFile != "secrets/headers.yaml" {
		t.Errorf("JSON round trip lost headers: %s", b)
	}
}

func TestSecretsAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "job.env")
	if err := os.WriteFile(env, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, `jobs: [{name: a, schedule: "@daily", exec: {command: [date], env_file: "`+env+`"}}]`)
	if got := cfg.Jobs[0].Exec.Env; !reflect.DeepEqual(got, map[string]string{"A": "1"}) {
		t.Errorf("env = %v", got)
	}
}

func TestRedacted(t *testing.T) {
	cfg, err := Load("testdata/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range cfg.Jobs {
		orig, _ := json.Marshal(j)
		r := j.Redacted()
		shown, _ := json.Marshal(r)
		for _, secret := range []string{"s3cret-from-file", "t0ken-from-file", "abc-from-file", "p=ss", "data", "full"} {
			if strings.Contains(string(shown), secret) {
				t.Errorf("%s: redacted JSON shows %q: %s", j.Name, secret, shown)
			}
		}
		if after, _ := json.Marshal(j); string(after) != string(orig) {
			t.Errorf("%s: Redacted changed the job itself", j.Name)
		}
		if j.HTTP != nil {
			for name := range j.HTTP.Headers {
				if v, ok := r.HTTP.Headers[name]; !ok || v != RedactedValue {
					t.Errorf("header %s = %q, %v; want the name kept, the value %q", name, v, ok, RedactedValue)
				}
			}
			if r.HTTP.HeadersFile != j.HTTP.HeadersFile || r.HTTP.URL != j.HTTP.URL {
				t.Errorf("redacted job lost what is not secret: %+v", r.HTTP)
			}
		}
		if j.Exec != nil {
			for name := range j.Exec.Env {
				if v, ok := r.Exec.Env[name]; !ok || v != RedactedValue {
					t.Errorf("env %s = %q, %v; want the name kept, the value %q", name, v, ok, RedactedValue)
				}
			}
		}
	}
}

// Redacted must copy every reference in a Job, or a caller changing the
// copy (an API handler filling in defaults) would change the running spec.
// The first half of this test fails when a reference-typed field is added
// without clone learning about it.
func TestRedactedSharesNothing(t *testing.T) {
	refs := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[Job](), reflect.TypeFor[HTTP](), reflect.TypeFor[Exec]()} {
		for f := range typ.Fields() {
			switch f.Type.Kind() {
			case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func:
				refs[typ.Name()+"."+f.Name] = true
			}
		}
	}
	cloned := map[string]bool{
		"Job.Resources": true, "Job.HTTP": true, "Job.Exec": true, "Job.Notify": true, "Job.After": true, "Job.Rate": true, "Job.Input": true,
		"Job.Schedules": true, "Job.Exclude": true, "Job.ShardInputs": true,
		"HTTP.Headers": true, "HTTP.SuccessCodes": true,
		"Exec.Command": true, "Exec.Env": true,
	}
	if !reflect.DeepEqual(refs, cloned) {
		t.Fatalf("reference fields %v, clone copies %v: update Job.clone", refs, cloned)
	}

	j := Job{
		Name:      "a",
		Resources: []string{"db"},
		HTTP:      &HTTP{Headers: map[string]string{"A": "1"}, SuccessCodes: []string{"2xx"}},
		Exec:      &Exec{Command: []string{"date"}, Env: map[string]string{"B": "2"}},
	}
	r := j.Redacted()
	r.Resources[0] = "x"
	r.HTTP.SuccessCodes[0] = "x"
	r.HTTP.Headers["C"] = "x"
	r.Exec.Command[0] = "x"
	r.Exec.Env["D"] = "x"
	r.HTTP.URL = "x"
	r.Exec.Dir = "x"
	if j.Resources[0] != "db" || j.HTTP.SuccessCodes[0] != "2xx" || len(j.HTTP.Headers) != 1 ||
		j.Exec.Command[0] != "date" || len(j.Exec.Env) != 1 || j.HTTP.URL != "" || j.Exec.Dir != "" {
		t.Errorf("changing the redacted copy changed the job: %+v %+v %+v", j, *j.HTTP, *j.Exec)
	}
	if (Job{}).Redacted().HTTP != nil {
		t.Error("a job without http got one")
	}
}

// The config hash is public (GET /api/v1/members): a value must not change
// it, or the hash would let anyone test guesses of a secret; a name does.
func TestHashLeavesOutSecretValues(t *testing.T) {
	dir := t.TempDir()
	hash := func(headers string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "h.yaml"), []byte(headers), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(filepath.Join(dir, "c.yaml"), []byte(`jobs: [{name: a, schedule: "@daily", http: {url: "http://x", headers_file: h.yaml, headers: {X-A: "1"}}}]`))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Hash()
	}
	h := hash("Authorization: one\n")
	if h2 := hash("Authorization: two\n"); h2 != h {
		t.Errorf("a secret value changed the hash: %s != %s", h, h2)
	}
	if h2 := hash("X-Other: one\n"); h2 == h {
		t.Error("a different header name left the hash alone")
	}
}
