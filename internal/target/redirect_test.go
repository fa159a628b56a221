package target

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/etcdsched/scheduler/internal/runs"
)

// headerLog records the headers of every request a server receives, by path.
type headerLog struct {
	mu  sync.Mutex
	got map[string]http.Header
}

func (l *headerLog) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string]http.Header{}
	}
	l.got[r.URL.Path] = r.Header.Clone()
}

func (l *headerLog) at(path string) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got[path]
}

// TestHTTPRedirectToAnotherHostDropsHeaders: two real servers on 127.0.0.1,
// different ports. A job's headers and the X-Scheduler-* values follow a
// redirect on the same host, and none of them follow one to the other
// server, nor a redirect back from it.
func TestHTTPRedirectToAnotherHostDropsHeaders(t *testing.T) {
	var origin, other headerLog
	otherSrv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		}
	})
	var originURL string
	originSrv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		origin.record(r)
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/landed", http.StatusFound)
		case "/away":
			http.Redirect(w, r, otherSrv.URL+"/landed", http.StatusTemporaryRedirect)
		case "/round-trip":
			http.Redirect(w, r, otherSrv.URL+"/bounce?to="+originURL+"/back", http.StatusFound)
		}
	})
	originURL = originSrv.URL
	jobHeaders := map[string]string{"X-Api-Key": "s3cret", "Authorization": "Bearer s3cret", "X-Team": "data"}
	e := testExecutor(t)
	run := func(path string) {
		t.Helper()
		job := httpJob(originSrv.URL + path)
		job.HTTP.FollowRedirects = true
		job.HTTP.Headers = jobHeaders
		if res := e.Execute(t.Context(), job, testRun()); res.Outcome != runs.Succeeded || res.HTTPStatus != 200 {
			t.Fatalf("%s: result = %+v, want succeeded 200 after the redirect", path, res)
		}
	}
	// ours lists the headers of the first request found in h.
	ours := func(h http.Header) []string {
		var found []string
		for k := range h {
			if _, job := jobHeaders[k]; job || strings.HasPrefix(k, "X-Scheduler-") {
				found = append(found, k)
			}
		}
		return found
	}

	run("/same")
	if h := origin.at("/landed"); h.Get("X-Api-Key") != "s3cret" || h.Get("X-Scheduler-Fencing-Token") != wantFields["FENCING_TOKEN"] {
		t.Errorf("same-host redirect lost headers: %v", h)
	}

	run("/away")
	if h := origin.at("/away"); h.Get("X-Api-Key") != "s3cret" {
		t.Errorf("first request lacks the job's header: %v", h)
	}
	if found := ours(other.at("/landed")); len(found) > 0 {
		t.Errorf("redirect to %s carried %q", otherSrv.URL, found)
	}

	run("/round-trip")
	if found := ours(other.at("/bounce")); len(found) > 0 {
		t.Errorf("redirect to %s carried %q", otherSrv.URL, found)
	}
	if found := ours(origin.at("/back")); len(found) > 0 {
		t.Errorf("redirect back to the origin through %s carried %q", otherSrv.URL, found)
	}
}
