package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/etcdsched/scheduler/internal/runs"
)

// Result is how a target ended: the executor's part of a run record.
type Result struct {
	Outcome    runs.Outcome
	ExitCode   *int   // exec only: set when the process exited, nil when a signal ended it
	HTTPStatus int    // HTTP only: set when a response arrived
	Error      string // why the run did not succeed; empty on success
	Output     string // the last runs.OutputLimit bytes of output or body
}

// Fill copies the result into a run record.
func (r Result) Fill(rec *runs.Record) {
	rec.Outcome = r.Outcome
	rec.ExitCode = r.ExitCode
	rec.HTTPStatus = r.HTTPStatus
	rec.Error = r.Error
	rec.Output = r.Output
}

// errTimeout is the cause Execute gives its own timeout, so a run that ran out
// of time is told apart from one whose caller cancelled it, even when the
// caller's context also carries a deadline.
var errTimeout = errors.New("target: run timed out")

// stopped maps a context that ended a run to the outcome of docs/api.md:
// our own timeout is timed_out; anything else (a cancel request, the lease
// guard, shutdown) is cancelled, with the caller's cause as the error.
func stopped(ctx context.Context) Result {
	cause := context.Cause(ctx)
	if errors.Is(cause, errTimeout) {
		return Result{Outcome: runs.TimedOut, Error: withoutPackages(cause.Error()) + " (the job's timeout)"}
	}
	return Result{Outcome: runs.Cancelled, Error: cancelledWhy(cause)}
}

func failed(format string, args ...any) Result {
	return Result{Outcome: runs.Failed, Error: fmt.Sprintf(format, args...)}
}
