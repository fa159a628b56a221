package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequest sends the real router arbitrary methods, targets and bodies,
// parsed the way the server parses a request off the wire. Whatever
// arrives, the router must not panic, must never redirect, and every error
// must have the JSON shape with a bounded message. There is no cluster, so
// every request that gets past routing, auth and body checks ends at 503.
func FuzzRequest(f *testing.F) {
	for _, seed := range []struct{ method, target, body string }{
		{"GET", "/api/v1/jobs", ""},
		{"GET", "/api/v1/jobs/nightly-report/runs?limit=5", ""},
		{"POST", "/api/v1/jobs/a/trigger", `{"input": {"k": "v"}, "idempotency_key": "k-1"}`},
		{"POST", "/api/v1/runs/a@2026-01-01T00:00:00Z/cancel", `{"reason": "stuck"}`},
		{"DELETE", "/api/v1/jobs", ""},
		{"GET", "//api/v1/jobs", ""},
		{"GET", "/api/v1/../v1/jobs", ""},
		{"GET", "/api/v1/jobs/%2e%2e/runs", ""},
		{"POST", "/api/v1/jobs/a%2Fb/pause", "{}"},
		{"GET", "/nope", ""},
		{"OPTIONS", "*", ""},
		{"GET", "http://example.com/api/v1/status", ""},
	} {
		f.Add(seed.method, seed.target, seed.body)
	}
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, target, body string) {
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", method, target, len(body), body)
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // the server would have answered 400 before routing
		}
		if req.URL.Path == "*" || req.Method == http.MethodConnect {
			return // answered by the server itself, not the router
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, req, rec)
	})
}

func checkAnswer(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 300 && rec.Code < 400 {
		t.Fatalf("%s %q: redirect %d to %q", req.Method, req.URL, rec.Code, rec.Header().Get("Location"))
	}
	if rec.Code < 400 {
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %q: %d with Content-Type %q: %.200s", req.Method, req.URL, rec.Code, ct, rec.Body)
	}
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("%s %q: %d body is not the error shape (%v): %.200s", req.Method, req.URL, rec.Code, err, rec.Body)
	}
	if len(e.Error.Message) > maxMessage+len("…") {
		t.Fatalf("%s %q: message of %d bytes", req.Method, req.URL, len(e.Error.Message))
	}
	if rec.Code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
		t.Fatalf("%s %q: 405 without Allow", req.Method, req.URL)
	}
}

// FuzzTriggerBody: whatever the body, parseTrigger either names a mistake
// with a known code or returns an input that is a JSON object within the
// limit and a key of the documented syntax.
func FuzzTriggerBody(f *testing.F) {
	for _, seed := range []string{
		"", "{}", `{"input": {"customer_id": "c-1001"}, "idempotency_key": "sync-c-1001-2026-11-23"}`,
		`{"input": null}`, `{"input": []}`, `{"input": {"a": {"b": [1, 2, {"c": null}]}}}`,
		`{"idempotency_key": ""}`, `{"idempotency_key": "` + strings.Repeat("k", 129) + `"}`,
		`{"input": {}} trailing`, "[1]", `"str"`, "{\"input\": {\"\\ud800\": 1}}",
	} {
		f.Add([]byte(seed))
	}
	codes := map[string]bool{"": true, "bad_body": true, "bad_input": true, "input_too_large": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, code, msg := parseTrigger(bytes.NewReader(body))
		if !codes[code] {
			t.Fatalf("unknown code %q", code)
		}
		if code != "" {
			if msg == "" {
				t.Fatalf("code %s without a message", code)
			}
			return
		}
		if req.Input != nil {
			var v map[string]any
			if err := json.Unmarshal(req.Input, &v); err != nil || v == nil {
				t.Fatalf("accepted input %q is not a JSON object: %v", req.Input, err)
			}
			if len(req.Input) > MaxTriggerInput {
				t.Fatalf("accepted input of %d bytes", len(req.Input))
			}
		}
		if req.IdempotencyKey != "" && !reIdempotencyKey.MatchString(req.IdempotencyKey) {
			t.Fatalf("accepted key %q", req.IdempotencyKey)
		}
	})
}
