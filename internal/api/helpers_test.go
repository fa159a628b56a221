package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newTestServer serves the real router, without a cluster: every answer
// these tests look at is decided before the engine would be asked.
func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// answer is a response with its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request and never follows a redirect: a redirect is an
// answer the tests must see.
func do(t *testing.T, ts *httptest.Server, method, path string, body io.Reader) answer {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
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

// wantError checks the JSON error shape of docs/api.md#errors and returns the
// message.
func wantError(t *testing.T, a answer, status int, code string) string {
	t.Helper()
	if a.status != status {
		t.Errorf("status %d, want %d; body %.300s", a.status, status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e errorBody
	dec := json.NewDecoder(strings.NewReader(string(a.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("body is not the error shape: %v\n%.300s", err, a.body)
	}
	if e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("error %+v, want code %q and a message", e.Error, code)
	}
	return e.Error.Message
}
