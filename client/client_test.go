package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve runs h for one test and returns a client of it.
func serve(t *testing.T, h http.HandlerFunc, opts ...Option) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	c, err := New(srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CloseIdleConnections()
		srv.Close()
	})
	return c
}

// An API error comes back typed, with the status, code and message of the
// body; a body that is not the API's (a proxy's page) still gives the
// status and the start of what was said.
func TestErrors(t *testing.T) {
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/jobs/nope" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error": {"code": "unknown_job", "message": "jobs: unknown job \"nope\""}}`)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html>bad gateway</html>")
	})
	_, err := c.Job(t.Context(), "nope")
	e, ok := AsError(err)
	if !ok || e.Status != 404 || e.Code != CodeUnknownJob || e.Message != `jobs: unknown job "nope"` || !IsCode(err, CodeUnknownJob) {
		t.Errorf("Job(nope) = %#v (%v)", e, err)
	}
	_, err = c.Jobs(t.Context())
	e, ok = AsError(err)
	if !ok || e.Status != 502 || e.Code != "" || e.Message != "Bad Gateway: <html>bad gateway</html>" {
		t.Errorf("Jobs through a broken proxy = %#v (%v)", e, err)
	}
}

// A server that is not there gives an error naming it, not an API error.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Leader(t.Context())
	var u *UnreachableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "http://"+addr) {
		t.Errorf("Leader on a closed port: %v", err)
	}
	if _, ok := AsError(err); ok {
		t.Errorf("no answer reported as an API error: %v", err)
	}
}

// Each request is bounded by the timeout, whatever the caller's context.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, WithTimeout(50*time.Millisecond))
	defer close(release)
	_, err := c.Status(t.Context())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Status on a server that never answers: %v", err)
	}
}

func TestNewRefusesBadURL(t *testing.T) {
	for _, s := range []string{"127.0.0.1:8080", "ftp://host", "http://", "::"} {
		if _, err := New(s); err == nil {
			t.Errorf("New(%q) accepted", s)
		}
	}
}

// Trigger sends the token, the input and the key of docs/api.md (and
// no body when there is neither), and reads run_id and duplicate; Raw is
// the answer as the server wrote it, fields unknown to the client included.
func TestTrigger(t *testing.T) {
	var got struct {
		auth, contentType string
		body              []byte
	}
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/jobs/sync/trigger" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		got.auth, got.contentType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		got.body, _ = io.ReadAll(r.Body)
		if len(got.body) == 0 {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"run_id": "sync@manual-1"}`)
			return
		}
		io.WriteString(w, `{"run_id": "sync@key-k1", "duplicate": true, "extra": 1}`)
	}, WithToken("t0k"))

	tr, err := c.Trigger(t.Context(), "sync", nil, "")
	if err != nil || tr.RunID != "sync@manual-1" || tr.Duplicate || len(got.body) != 0 {
		t.Errorf("plain trigger: %+v %v, body %q", tr, err, got.body)
	}
	if got.auth != "Bearer t0k" {
		t.Errorf("Authorization = %q", got.auth)
	}
	tr, err = c.Trigger(t.Context(), "sync", json.RawMessage(`{"customer_id":"c-1"}`), "k1")
	if err != nil || tr.RunID != "sync@key-k1" || !tr.Duplicate {
		t.Errorf("keyed trigger: %+v %v", tr, err)
	}
	if string(got.body) != `{"input":{"customer_id":"c-1"},"idempotency_key":"k1"}` || got.contentType != "application/json" {
		t.Errorf("body %s (%s)", got.body, got.contentType)
	}
	if !strings.Contains(string(tr.Raw), `"extra": 1`) {
		t.Errorf("Raw = %s, want the answer as sent", tr.Raw)
	}
}

// Runs sends limit and before only when set, and escapes names.
func TestRunsQuery(t *testing.T) {
	var queries []string
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		io.WriteString(w, `[{"run_id": "a b@1", "input": {"x": 1}}]`)
	})
	runs, err := c.Runs(t.Context(), "a b", 0, "")
	if err != nil || len(runs) != 1 || string(runs[0].Input) != `{"x": 1}` {
		t.Fatalf("Runs: %+v %v", runs, err)
	}
	if _, err := c.Runs(t.Context(), "a b", 5, "a b@1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"/api/v1/jobs/a%20b/runs?", "/api/v1/jobs/a%20b/runs?before=a+b%401&limit=5"}
	if strings.Join(queries, " ") != strings.Join(want, " ") {
		t.Errorf("queries %q, want %q", queries, want)
	}
}

// Wait asks again through a 503 (a leader change) and returns the finished
// record; an unknown run ends it at once.
func TestWait(t *testing.T) {
	var calls atomic.Int32
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case r.URL.Path == "/api/v1/runs/gone":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error": {"code": "unknown_run", "message": "jobs: unknown run \"gone\""}}`)
		case n == 1:
			io.WriteString(w, `{"state": "running", "run_id": "j@1"}`)
		case n == 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"code": "etcd_unavailable", "message": "etcd did not answer in time"}}`)
		default:
			io.WriteString(w, `{"state": "finished", "run_id": "j@1", "outcome": "failed", "exit_code": 3}`)
		}
	})
	run, err := c.Wait(t.Context(), "j@1", time.Millisecond)
	if err != nil || run.Outcome != "failed" || run.ExitCode == nil || *run.ExitCode != 3 || calls.Load() != 3 {
		t.Errorf("Wait: %+v %v after %d calls", run, err, calls.Load())
	}
	if _, err := c.Wait(t.Context(), "gone", time.Millisecond); !IsCode(err, CodeUnknownRun) {
		t.Errorf("Wait for an unknown run: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Wait(ctx, "j@1", time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
}
