package jobs

import "errors"

// The errors the API maps to answers.
var (
	// ErrUnknownJob: no job of that name in the current config.
	ErrUnknownJob = errors.New("jobs: unknown job")
	// ErrUnknownRun: no queued, running or recorded run of that id.
	ErrUnknownRun = errors.New("jobs: unknown run")
	// ErrFinished: the run has a record already; there is nothing to cancel.
	ErrFinished = errors.New("jobs: run already finished")
	// ErrBadConcurrencyKey: the run's input renders no valid concurrency
	// key, so it was not queued.
	ErrBadConcurrencyKey = errors.New("jobs: bad concurrency key")
	// ErrBadPause: a pause's until or reason cannot be taken.
	ErrBadPause = errors.New("jobs: bad pause")
)
