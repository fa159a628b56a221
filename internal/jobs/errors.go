package jobs

import (
	"errors"

	"github.com/etcdsched/scheduler/internal/refusal"
)

// The errors the API maps to answers.
var (
	// ErrUnknownJob: no job of that name in the current config.
	ErrUnknownJob = errors.New("jobs: unknown job")
	// ErrUnknownRun: no queued, running or recorded run of that id.
	ErrUnknownRun = errors.New("jobs: unknown run")
	// ErrFinished: the run has a record already; there is nothing to cancel.
	ErrFinished = errors.New("jobs: run already finished")
	// ErrBadConcurrencyKey: the run's input renders no valid concurrency
	// key, so it was not queued; the error also holds a *config.KeyError.
	ErrBadConcurrencyKey = errors.New("jobs: bad concurrency key")
	// ErrBadPause: a pause's until or reason cannot be taken.
	ErrBadPause = errors.New("jobs: bad pause")
)

// refuse is one of the errors above with a sentence for the person who
// asked: it names the job or run and says what to do.
var refuse = refusal.New
