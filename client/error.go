package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// APIError is an answer other than 2xx. Code and Message come from the API's
// {"error": {"code", "message"}} body; an answer without one (a proxy's
// HTML page, say) has an empty Code and a Message made from the status and
// the start of the body.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// Error codes of the API that callers act on.
const (
	CodeUnknownJob   = "unknown_job"
	CodeUnknownRun   = "unknown_run"
	CodeRunFinished  = "run_finished"
	CodeNoLeader     = "no_leader"
	CodeUnauthorized = "unauthorized"
)

// IsCode says whether err is an API error with the code.
func IsCode(err error, code string) bool {
	e, ok := AsError(err)
	return ok && e.Code == code
}

// AsError returns the API error inside err, if there is one.
func AsError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}

func decodeError(status int, data []byte) *APIError {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		return &APIError{Status: status, Code: body.Error.Code, Message: body.Error.Message}
	}
	msg := http.StatusText(status)
	if snippet := strings.TrimSpace(string(data)); snippet != "" {
		const most = 200
		if len(snippet) > most {
			snippet = snippet[:most] + "..."
		}
		msg += ": " + snippet
	}
	return &APIError{Status: status, Message: msg}
}

// UnreachableError is a request that got no answer: the server is down,
// the address is wrong, or the request timed out. It names the server, as
// that is usually what the caller has to fix.
type UnreachableError struct {
	Server string
	Err    error
	dial   bool // the connection was never made
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("no answer from %s: %s", e.Server, why(e.Err))
}

// why says in a user's words why a request got no answer, instead of the
// chain of Go's dial errors ("Get ...: dial tcp ...: connect: ...").
func why(err error) string {
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens there"
	case errors.As(err, &dns):
		return fmt.Sprintf("the host %q cannot be resolved", dns.Name)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "it did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the request was interrupted"
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the method and URL repeat what the message says
	}
	return err.Error()
}

func (e *UnreachableError) Unwrap() error { return e.Err }
