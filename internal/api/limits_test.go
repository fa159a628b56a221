package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs"
)

// unsized hides a body's length, so the client sends it chunked and the
// server learns the size only by reading.
type unsized struct{ r io.Reader }

func (u unsized) Read(p []byte) (int, error) { return u.r.Read(p) }

func TestBodyLimits(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		path  string
		limit int
	}{
		{"/api/v1/jobs/a/trigger", MaxTriggerBody},
		{"/api/v1/jobs/a/pause", MaxEmptyBody},
		{"/api/v1/jobs/a/resume", MaxEmptyBody},
		{"/api/v1/runs/a@1/cancel", MaxCancelBody},
	} {
		big := bytes.Repeat([]byte(" "), tc.limit+1)
		for name, body := range map[string]io.Reader{
			"sized":   bytes.NewReader(big),
			"chunked": unsized{bytes.NewReader(big)},
		} {
			t.Run(tc.path+"/"+name, func(t *testing.T) {
				msg := wantError(t, do(t, ts, "POST", tc.path, body), http.StatusRequestEntityTooLarge, "request_too_large")
				if !strings.Contains(msg, tc.path) || !strings.Contains(msg, "at most") {
					t.Errorf("message %q does not name the path and the limit", msg)
				}
			})
		}
		// At the limit the body is read and the request goes on: no
		// cluster here, so it ends at 503 (or 501 for an input).
		t.Run(tc.path+"/at-limit", func(t *testing.T) {
			a := do(t, ts, "POST", tc.path, bytes.NewReader(bytes.Repeat([]byte(" "), tc.limit)))
			wantError(t, a, http.StatusServiceUnavailable, "starting")
		})
	}
}

// A 64 KiB input fits the trigger body with its envelope; a larger one is
// 413 input_too_large, as docs/api.md#limits-and-timeouts says.
func TestTriggerInputLimit(t *testing.T) {
	ts := newTestServer(t)
	input := func(n int) string {
		// {"k":"..."} is n bytes of JSON.
		return `{"input": {"k":"` + strings.Repeat("x", n-8) + `"}, "idempotency_key": "k-1"}`
	}
	a := do(t, ts, "POST", "/api/v1/jobs/a/trigger", strings.NewReader(input(MaxTriggerInput)))
	wantError(t, a, http.StatusServiceUnavailable, "starting") // accepted; no cluster in this test
	a = do(t, ts, "POST", "/api/v1/jobs/a/trigger", strings.NewReader(input(MaxTriggerInput+1)))
	wantError(t, a, http.StatusRequestEntityTooLarge, "input_too_large")
}

func TestTriggerBody(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{"", http.StatusServiceUnavailable, "starting"},
		{"  \n", http.StatusServiceUnavailable, "starting"},
		{"{}", http.StatusServiceUnavailable, "starting"},
		{`{"input": null}`, http.StatusServiceUnavailable, "starting"},
		{"[]", http.StatusBadRequest, "bad_body"},
		{"{", http.StatusBadRequest, "bad_body"},
		{`{"inptu": {}}`, http.StatusBadRequest, "bad_body"},
		{`{} {}`, http.StatusBadRequest, "bad_body"},
		{`{"input": [1]}`, http.StatusBadRequest, "bad_input"},
		{`{"input": "x"}`, http.StatusBadRequest, "bad_input"},
		{`{"idempotency_key": "a b"}`, http.StatusBadRequest, "bad_body"},
		{`{"input": {"customer_id": "c-1"}}`, http.StatusServiceUnavailable, "starting"},
	} {
		a := do(t, ts, "POST", "/api/v1/jobs/a/trigger", strings.NewReader(tc.body))
		t.Run(tc.body, func(t *testing.T) { wantError(t, a, tc.status, tc.code) })
	}
}

func TestCancelBody(t *testing.T) {
	for _, tc := range []struct{ body, reason, msg string }{
		{"", defaultCancelReason, ""},
		{`{"reason": "stuck"}`, "stuck", ""},
		{`{"reason": ""}`, defaultCancelReason, ""},
		{`{"reason": 1}`, "", `the body has "reason" as a number, where a string is expected; send JSON like {"reason": "..."}, or no body`},
	} {
		reason, msg := parseCancel(strings.NewReader(tc.body))
		if reason != tc.reason || msg != tc.msg {
			t.Errorf("%q: got %q, %q; want %q, %q", tc.body, reason, msg, tc.reason, tc.msg)
		}
	}
}

// A pause's body is optional; a reason and an RFC 3339 until are taken,
// anything else is answered 400 saying what the body should look like.
func TestPauseBody(t *testing.T) {
	until := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		body string
		want jobs.PauseRequest
		msg  string
	}{
		{"", jobs.PauseRequest{}, ""},
		{"{}", jobs.PauseRequest{}, ""},
		{`{"reason": "freeze"}`, jobs.PauseRequest{Reason: "freeze"}, ""},
		{`{"reason": "freeze", "until": "2026-11-25T19:00:00+01:00"}`, jobs.PauseRequest{Reason: "freeze", Until: until}, ""},
		{`{"until": "tomorrow"}`, jobs.PauseRequest{}, `until "tomorrow" is not an RFC 3339 time like 2026-11-25T18:00:00Z`},
		{`{"reson": "typo"}`, jobs.PauseRequest{}, `the body must be one JSON object like {"reason": "...", "until": "RFC3339 time"} (both optional)`},
		{`"freeze"`, jobs.PauseRequest{}, `the body must be one JSON object like {"reason": "...", "until": "RFC3339 time"} (both optional)`},
	} {
		req, msg := parsePause(strings.NewReader(tc.body))
		if msg != tc.msg || (msg == "" && (req.Reason != tc.want.Reason || !req.Until.Equal(tc.want.Until))) {
			t.Errorf("%q: got %+v, %q; want %+v, %q", tc.body, req, msg, tc.want, tc.msg)
		}
	}
	ts := newTestServer(t)
	a := do(t, ts, "POST", "/api/v1/jobs/a/pause", strings.NewReader(`{"until": "soon"}`))
	wantError(t, a, http.StatusBadRequest, "bad_body")
	a = do(t, ts, "POST", "/api/v1/jobs/a/pause", strings.NewReader(`{"reason": "freeze"}`))
	wantError(t, a, http.StatusServiceUnavailable, "starting") // accepted; no cluster in this test
}

func TestServerTimeouts(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	h := s.http
	if h.ReadHeaderTimeout != readHeaderTimeout || h.ReadTimeout != readTimeout || h.IdleTimeout != idleTimeout {
		t.Errorf("timeouts: header %s, read %s, idle %s", h.ReadHeaderTimeout, h.ReadTimeout, h.IdleTimeout)
	}
	if h.WriteTimeout != 0 {
		t.Errorf("WriteTimeout %s would cut off long lists; answers have their own deadline", h.WriteTimeout)
	}
	// Shortened, to see them act.
	h.ReadHeaderTimeout, h.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	serve(t, s)

	// A client that never finishes its headers is cut off.
	conn := dial(t, s.Addr())
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, conn, "a connection with unfinished headers")

	// An idle keep-alive connection is closed.
	conn = dial(t, s.Addr())
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("healthz %d", res.StatusCode)
	}
	waitClosed(t, readerConn{conn, br}, "an idle keep-alive connection")
}

// A client that sends its headers and then dribbles the body, a byte every
// 50ms for far longer than the read timeout, is answered 400 bad_body and
// its connection closed once the read timeout has passed: without
// ReadTimeout it would hold the connection as long as it keeps dribbling.
func TestSlowBodyIsCutOff(t *testing.T) {
	s, err := New(Options{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// Shortened, to see it act (a server without one keeps none); the
	// dribble below lasts 50s.
	s.http.ReadTimeout = min(s.http.ReadTimeout, 200*time.Millisecond)
	serve(t, s)

	conn := dial(t, s.Addr())
	const size = 1000
	if _, err := fmt.Fprintf(conn, "POST /api/v1/jobs/hello/trigger HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", size); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	dribbled := make(chan struct{})
	t.Cleanup(func() { close(stop); <-dribbled })
	go func() {
		defer close(dribbled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for range size - 1 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return // the server closed the connection
			}
		}
	}()

	br := bufio.NewReader(conn)
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, answer{status: res.StatusCode, header: res.Header, body: body}, http.StatusBadRequest, "bad_body")
	waitClosed(t, readerConn{conn, br}, "a connection with a slow body")
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// waitClosed reads until the server closes the connection; the read
// deadline is how long the test waits for it.
func waitClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, conn)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("%s stayed open", what)
	}
}

// deadlineRecorder is a ResponseWriter that records the write deadlines
// set through http.ResponseController.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// A long list moves the write deadline on as it goes out, chunk by chunk,
// so its total time is not bounded, only the time between chunks.
func TestStreamedListExtendsWriteDeadline(t *testing.T) {
	items := make([]string, 20000)
	for i := range items {
		items[i] = strings.Repeat("x", 30)
	}
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	start := time.Now()
	writeJSON(rec, http.StatusOK, items)
	chunks := rec.Body.Len() / (64 << 10)
	if len(rec.deadlines) < chunks {
		t.Fatalf("%d deadlines for %d chunks of 64 KiB", len(rec.deadlines), chunks)
	}
	for _, d := range rec.deadlines {
		if d.Before(start.Add(writeTimeout)) {
			t.Fatalf("deadline %s is less than writeTimeout after the start", d.Sub(start))
		}
	}
}

// serve listens and serves s until the test ends.
func serve(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}
