package api

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/etcdsched/scheduler/internal/jobs"
)

// pageOf reads ?limit=N and the cursor parameter of a listing; limit 0
// (when def is 0 and none is given) asks for everything. On a bad value it
// answers 400 and reports false.
func pageOf(w http.ResponseWriter, r *http.Request, def int, cursor string) (jobs.Page, bool) {
	p := jobs.Page{Limit: def, After: r.URL.Query().Get(cursor)}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRunsLimit {
			writeError(w, http.StatusBadRequest, "bad_limit", "limit must be a whole number from 1 to "+strconv.Itoa(maxRunsLimit)+", got "+quoteClip(v))
			return p, false
		}
		p.Limit = n
	}
	if len(p.After) > 256 {
		writeError(w, http.StatusBadRequest, "bad_cursor", cursor+" is longer than any job name or run id")
		return p, false
	}
	return p, true
}

// setNext tells where the following page starts, when there is one: the
// cursor in X-Next-Cursor, and the whole request in a Link header, so the
// answer's body stays the plain list it always was.
func setNext(w http.ResponseWriter, r *http.Request, next, cursor string) {
	if next == "" {
		return
	}
	q := r.URL.Query()
	q.Set(cursor, next)
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	w.Header().Set("X-Next-Cursor", next)
	w.Header().Set("Link", "<"+u.String()+`>; rel="next"`)
}

// removedOf reads ?removed=true|false of the jobs listing: true lists the
// removed jobs whose history is kept instead of the configured ones. On a
// bad value it answers 400 and reports false.
func removedOf(w http.ResponseWriter, r *http.Request) (removed, ok bool) {
	v := r.URL.Query().Get("removed")
	if v == "" {
		return false, true
	}
	removed, err := strconv.ParseBool(v)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_removed", "removed must be true or false, got "+quoteClip(v))
		return false, false
	}
	return removed, true
}
