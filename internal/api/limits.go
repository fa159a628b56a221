package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Request body limits, one per endpoint that takes a body. A body past its
// limit is answered 413 request_too_large before the engine is asked
// anything; the body is read whole first, so a handler never sees part of
// one.
const (
	// MaxTriggerBody holds {"input": {...}, "idempotency_key": "..."}: an
	// input of up to 64 KiB (docs/api.md#limits-and-timeouts) and the envelope around it,
	// with room for JSON escaping.
	MaxTriggerBody = 128 << 10
	// MaxCancelBody holds {"reason": "..."}.
	MaxCancelBody = 4 << 10
	// MaxPauseBody holds {"reason": "...", "until": "..."}: a reason of
	// up to 500 bytes (jobs.MaxPauseReason), with room for JSON escaping.
	MaxPauseBody = 4 << 10
	// MaxEmptyBody is for POST endpoints that take no body (resume): a
	// client library may still send "{}".
	MaxEmptyBody = 4 << 10
)

// Connection timeouts. Reads are short: every request is a few KiB at
// most. Writes are bounded per request instead of per connection, and
// extended while a long list streams out (see writeList), so that a list
// of 100,000 jobs reaches a client that keeps reading, while one that stops
// reading is dropped.
const (
	// readHeaderTimeout bounds the request line and headers.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds the whole request, body included.
	readTimeout = 30 * time.Second
	// writeTimeout bounds an answer, or a stream's progress between two
	// chunks.
	writeTimeout = 30 * time.Second
	// profileWriteTimeout lets /debug/pprof/profile run its default 30s
	// and answer.
	profileWriteTimeout = 2 * time.Minute
	// idleTimeout closes keep-alive connections nobody uses.
	idleTimeout = 2 * time.Minute
)

// withBody reads the request body, up to limit bytes, before h runs, and
// answers 413 past the limit. A declared Content-Length is checked before
// anything is read.
func withBody(limit int64, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			tooLarge(w, r.URL.Path, limit)
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				tooLarge(w, r.URL.Path, limit)
				return
			}
			writeError(w, http.StatusBadRequest, "bad_body", "reading the request body: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h(w, r)
	}
}

func tooLarge(w http.ResponseWriter, path string, limit int64) {
	writeError(w, http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("the body of a request to %s may be at most %d bytes", clip(path), limit))
}

// withWriteDeadline bounds the time to write each answer.
func withWriteDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := writeTimeout
		if r.URL.Path == "/debug/pprof/profile" {
			d = profileWriteTimeout
		}
		// Not every ResponseWriter supports deadlines (a test recorder
		// does not); the server's own always does.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
		h.ServeHTTP(w, r)
	})
}
