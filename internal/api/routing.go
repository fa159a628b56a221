package api

import (
	"fmt"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// ServeHTTP routes a request. The mux answers some requests itself, in
// text or HTML: unknown paths (404), wrong methods (405) and paths that
// are not in canonical form (a 301 to the cleaned path). Those answers are
// replaced here with the JSON error shape, so that a client can read every
// error the same way.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A non-canonical path ("//api/v1/jobs", "/api/v1/../v1/jobs") gets
	// 404, not the mux's redirect: a client following a 301 repeats a
	// POST as a GET, so "POST //api/v1/jobs/x/trigger" would read the job
	// and report success without triggering anything. API clients build
	// their paths; one that builds them wrong should hear so.
	if p := r.URL.Path; p != cleanPath(p) {
		writeError(w, http.StatusNotFound, "not_found",
			fmt.Sprintf("path %s is not in canonical form: use %s", quoteClip(p), quoteClip(cleanPath(p))))
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// No route: let the mux decide between 404 and 405 (it knows which
	// methods the path has) and translate its answer.
	var ans muxAnswer
	ans.header = http.Header{}
	h.ServeHTTP(&ans, r)
	if ans.status == http.StatusMethodNotAllowed {
		allow := ans.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s is not allowed on %s: use %s", quoteClip(r.Method), quoteClip(r.URL.Path), allow))
		return
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", quoteClip(r.Method), quoteClip(r.URL.Path)))
}

// muxAnswer records the status and headers of the mux's own answer and
// drops its text body.
type muxAnswer struct {
	header http.Header
	status int
}

func (a *muxAnswer) Header() http.Header { return a.header }

func (a *muxAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *muxAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return len(b), nil
}

// cleanPath is the path the mux would redirect to: "." and ".." resolved,
// repeated slashes collapsed, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}

// maxEcho bounds what of a request (a job name, a run id, a path) an error
// message repeats: a 1 MB name should not come back as a 1 MB message.
const maxEcho = 128

// clip shortens s to maxEcho characters, marking the cut with "…".
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	n, i := 0, 0
	for i < len(s) && n < maxEcho {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…"
}

// quoteClip quotes a clipped value for a message.
func quoteClip(s string) string { return fmt.Sprintf("%q", clip(s)) }
