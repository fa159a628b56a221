package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs"

	"github.com/etcdsched/scheduler/internal/jsonerr"
	"github.com/etcdsched/scheduler/internal/wire"
)

// MaxTriggerInput is the largest trigger input, in bytes of JSON (docs/api.md#limits-and-timeouts).
const MaxTriggerInput = 64 << 10

var reIdempotencyKey = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

const triggerShape = `{"input": {...}, "idempotency_key": "..."}`

// parseTrigger reads a trigger body; an empty one is a trigger without
// input. On a mistake it returns the error code and message to answer.
func parseTrigger(body io.Reader) (req wire.TriggerBody, code, msg string) {
	b, err := io.ReadAll(body)
	if err != nil {
		return req, "bad_body", "reading the request body: " + err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return req, "", ""
	}
	if b[0] != '{' {
		return req, "bad_body", "the body must be a JSON object like " + triggerShape
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, "bad_body", fmt.Sprintf("the body %s; send a JSON object like %s", jsonerr.Describe(err), triggerShape)
	}
	if dec.More() {
		return req, "bad_body", "the body must be one JSON object, and nothing after it"
	}
	if in := bytes.TrimSpace(req.Input); len(in) == 0 || string(in) == "null" {
		req.Input = nil
	} else if in[0] != '{' {
		return req, "bad_input", "input must be a JSON object, e.g. {\"input\": {\"customer_id\": \"42\"}}, got " + quoteClip(string(in))
	} else if len(in) > MaxTriggerInput {
		return req, "input_too_large", fmt.Sprintf("input is %d bytes of JSON; at most %d are allowed", len(in), MaxTriggerInput)
	}
	if req.IdempotencyKey != "" && !reIdempotencyKey.MatchString(req.IdempotencyKey) {
		return req, "bad_body", "idempotency_key " + quoteClip(req.IdempotencyKey) + " must match [A-Za-z0-9._:-]{1,128}"
	}
	return req, "", ""
}

// statusOf is the HTTP status of a body error code.
func statusOf(code string) int {
	if code == "input_too_large" {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

const defaultCancelReason = "cancelled through the API"

// parseCancel reads the optional {"reason": "..."} of a cancel; msg says
// what is wrong with a body that cannot be read.
func parseCancel(body io.Reader) (reason, msg string) {
	b, err := io.ReadAll(body)
	if err != nil {
		return "", "reading the request body: " + err.Error()
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return defaultCancelReason, ""
	}
	var v wire.CancelBody
	if err := json.Unmarshal(b, &v); err != nil {
		return "", "the body " + jsonerr.Describe(err) + `; send JSON like {"reason": "..."}, or no body`
	}
	if v.Reason == "" {
		return defaultCancelReason, ""
	}
	return v.Reason, ""
}

const pauseShape = `{"reason": "...", "until": "RFC3339 time"}`

// parsePause reads the optional body of a pause; msg says what is wrong
// with one that cannot be taken.
func parsePause(body io.Reader) (req jobs.PauseRequest, msg string) {
	b, err := io.ReadAll(body)
	if err != nil {
		return req, "reading the request body: " + err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return req, ""
	}
	var v wire.PauseBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if b[0] != '{' || dec.Decode(&v) != nil || dec.More() {
		return req, "the body must be one JSON object like " + pauseShape + " (both optional)"
	}
	req.Reason = v.Reason
	if v.Until != "" {
		if req.Until, err = time.Parse(time.RFC3339, v.Until); err != nil {
			return req, "until " + quoteClip(v.Until) + " is not an RFC 3339 time like 2026-11-25T18:00:00Z"
		}
	}
	return req, ""
}
