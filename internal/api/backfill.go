package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/backfill"
	"github.com/etcdsched/scheduler/internal/jsonerr"
	"github.com/etcdsched/scheduler/internal/wire"
)

// MaxBackfillBody bounds the body of a backfill: two times.
const MaxBackfillBody = 4 << 10

// backfillRequestTimeout bounds the etcd work of one backfill: up to
// backfill.MaxTicks ticks, written 100 a request.
const backfillRequestTimeout = 60 * time.Second

const backfillShape = `{"from": "2026-11-24T02:00:00Z", "to": "2026-11-24T05:00:00Z"}`

// backfill serves POST /api/v1/jobs/{name}/backfill (docs/operations.md#backfilling):
// 200 with what became of every tick of [from, to).
func (s *Server) backfill(w http.ResponseWriter, r *http.Request) {
	from, to, msg := parseBackfill(r.Body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "bad_body", msg)
		return
	}
	// The answer comes after up to backfillRequestTimeout of etcd work:
	// its write deadline counts from then, not from the request.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(backfillRequestTimeout + writeTimeout))
	cl, r, done := s.ask(w, r, backfillRequestTimeout)
	if cl == nil {
		return
	}
	defer done()
	res, err := cl.Backfill(r.Context(), r.PathValue("name"), from, to)
	switch {
	case errors.Is(err, backfill.ErrTooManyTicks):
		writeError(w, http.StatusBadRequest, "too_many_ticks", userMessage(err))
	case errors.Is(err, backfill.ErrBadRange):
		writeError(w, http.StatusBadRequest, "bad_range", userMessage(err))
	case errors.Is(err, backfill.ErrNotScheduled):
		writeError(w, http.StatusConflict, "not_scheduled_yet", userMessage(err))
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "etcd_unavailable", fmt.Sprintf(
			"etcd did not finish the backfill within %s; the %d ticks queued so far stay queued; repeat the backfill to queue the rest",
			backfillRequestTimeout, len(res.Queued)))
	default:
		respond(w, r, http.StatusOK, res, err)
	}
}

// parseBackfill reads {"from": RFC3339, "to": RFC3339}; msg says what is
// wrong with a body that cannot be taken.
func parseBackfill(body io.Reader) (from, to time.Time, msg string) {
	b, err := io.ReadAll(body)
	if err != nil {
		return from, to, "reading the request body: " + err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return from, to, "the body must be a JSON object like " + backfillShape
	}
	var v wire.BackfillBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return from, to, fmt.Sprintf("the body %s; send a JSON object like %s", jsonerr.Describe(err), backfillShape)
	}
	if dec.More() {
		return from, to, "the body must be one JSON object, and nothing after it"
	}
	if from, msg = parseTime("from", v.From); msg != "" {
		return from, to, msg
	}
	to, msg = parseTime("to", v.To)
	return from, to, msg
}

func parseTime(field, value string) (time.Time, string) {
	if value == "" {
		return time.Time{}, field + " is missing; send a JSON object like " + backfillShape
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, field + " " + quoteClip(value) + " is not an RFC 3339 time like 2026-11-24T02:00:00Z"
	}
	return t, ""
}
