package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/etcdsched/scheduler/internal/api/dashboard"
	"github.com/etcdsched/scheduler/internal/jobs"
)

func TestUnknownPathsAnswerJSON(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"POST", "/nope"},
		{"GET", "/api/v1/nothing"},
		{"GET", "/api/v1/jobs/a/b/c"},
		{"GET", "/api/v1/jobs/"}, // a trailing slash is another path
		{"GET", "/index.html"},   // the file server would redirect to ./
		{"PUT", "/metrics"},      // no Gatherer: no route at all
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			a := do(t, ts, tc.method, tc.path, nil)
			msg := wantError(t, a, http.StatusNotFound, "not_found")
			if want := `no route for "` + tc.method + `" "` + tc.path + `"`; msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
		})
	}
	// The dashboard is still served: the page and each file it loads.
	for _, p := range append([]string{"/"}, dashboard.Assets()...) {
		if a := do(t, ts, "GET", p, nil); a.status != http.StatusOK {
			t.Errorf("GET %s: %d", p, a.status)
		}
	}
}

func TestWrongMethodAnswers405(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/jobs", "GET, HEAD"},
		{"POST", "/api/v1/leader", "GET, HEAD"},
		{"GET", "/api/v1/jobs/a/trigger", "POST"},
		{"PUT", "/api/v1/runs/a@1/cancel", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			a := do(t, ts, tc.method, tc.path, nil)
			msg := wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
			if got := a.header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if !strings.Contains(msg, tc.allow) {
				t.Errorf("message %q does not say what is allowed", msg)
			}
		})
	}
}

// The mux would answer 301 with an HTML body; a client following it would
// repeat a POST as a GET.
func TestNonCanonicalPathsAnswer404(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct{ method, path, clean string }{
		{"GET", "//api/v1/jobs", "/api/v1/jobs"},
		{"GET", "/api/v1/../v1/jobs", "/api/v1/jobs"},
		{"GET", "/api/v1/./jobs", "/api/v1/jobs"},
		{"POST", "//api/v1/jobs/a/trigger", "/api/v1/jobs/a/trigger"},
		{"GET", "/api//v1/status", "/api/v1/status"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			a := do(t, ts, tc.method, tc.path, nil)
			msg := wantError(t, a, http.StatusNotFound, "not_found")
			if loc := a.header.Get("Location"); loc != "" {
				t.Errorf("Location %q: no redirect wanted", loc)
			}
			if want := `path "` + tc.path + `" is not in canonical form: use "` + tc.clean + `"`; msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
		})
	}
}

// Names from the path come back clipped, and a name no job can have is
// answered without asking the engine.
func TestEchoedNamesClipped(t *testing.T) {
	ts := newTestServer(t)
	long := strings.Repeat("a", 5000)
	for _, tc := range []struct{ method, path, code string }{
		{"GET", "/api/v1/jobs/" + long, "unknown_job"},
		{"POST", "/api/v1/jobs/" + long + "/trigger", "unknown_job"},
		{"GET", "/api/v1/jobs/Not%20A%20Name/runs", "unknown_job"},
		{"GET", "/" + long, "not_found"},
		{"DELETE", "/api/v1/jobs/" + long, "method_not_allowed"},
	} {
		a := do(t, ts, tc.method, tc.path, nil)
		status := http.StatusNotFound
		if tc.code == "method_not_allowed" {
			status = http.StatusMethodNotAllowed
		}
		msg := wantError(t, a, status, tc.code)
		if utf8.RuneCountInString(msg) > 2*maxEcho+100 {
			t.Errorf("%s %.40s...: message of %d characters", tc.method, tc.path, len(msg))
		}
		switch {
		case tc.code == "unknown_job" && strings.Contains(tc.path, long):
			if !strings.HasPrefix(msg, `no job "`+strings.Repeat("a", maxEcho)+`…"`) {
				t.Errorf("message %.200q does not show the clipped name", msg)
			}
		case strings.Contains(tc.path, long):
			if !strings.Contains(msg, "a…") {
				t.Errorf("message %.200q does not show the clipped path", msg)
			}
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{strings.Repeat("x", maxEcho), strings.Repeat("x", maxEcho)},
		{strings.Repeat("x", maxEcho+1), strings.Repeat("x", maxEcho) + "…"},
		{strings.Repeat("é", maxEcho+5), strings.Repeat("é", maxEcho) + "…"}, // cut at a rune, not a byte
	} {
		if got := clip(tc.in); got != tc.want {
			t.Errorf("clip(%d bytes) = %q", len(tc.in), got)
		}
	}
}

// What the engine reports as unknown is echoed from the path, clipped.
func TestRespondUnknownClipped(t *testing.T) {
	long := strings.Repeat("r", 1000)
	for _, tc := range []struct {
		key  string
		err  error
		code string
		want string
	}{
		{"name", fmt.Errorf("get: %w", jobs.ErrUnknownJob), "unknown_job", `no job "` + strings.Repeat("r", maxEcho) + `…"`},
		{"id", jobs.ErrUnknownRun, "unknown_run", `no run "` + strings.Repeat("r", maxEcho) + `…"`},
		{"", jobs.ErrUnknownRun, "unknown_run", jobs.ErrUnknownRun.Error()},
	} {
		req := httptest.NewRequest("GET", "/x", nil)
		if tc.key != "" {
			req.SetPathValue(tc.key, long)
		}
		rec := httptest.NewRecorder()
		respond(rec, req, http.StatusOK, nil, tc.err)
		msg := wantError(t, answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}, http.StatusNotFound, tc.code)
		if msg != tc.want {
			t.Errorf("message %q, want %q", msg, tc.want)
		}
	}
}
