package target

import (
	"errors"
	"strings"

	"github.com/etcdsched/scheduler/internal/session"
)

// cancelledWhy is the record's error of a run its caller cancelled, in the
// words of the person reading the run (docs/operations.md): what stopped
// it, without the package chain the cause carries for logs.
func cancelledWhy(cause error) string {
	return "run cancelled: " + causeWords(cause)
}

// causeWords says why a run's context ended: the cause's own sentence for
// people when it has one, else a sentence for the causes the scheduler
// gives, else the cause's text less the package prefixes in front of it.
func causeWords(cause error) string {
	var m interface{ UserMessage() string }
	switch {
	case cause == nil:
		return "its context ended"
	case errors.As(cause, &m):
		return m.UserMessage()
	case errors.Is(cause, session.ErrGuardExpired), errors.Is(cause, session.ErrLeaseGone):
		return "this replica's etcd session could have expired, so the run was stopped before another replica could take its slot"
	}
	msg := withoutPackages(cause.Error())
	if words, ok := causeSentences[msg]; ok {
		return words
	}
	return msg
}

// causeSentences words the causes of other packages that carry no
// sentence of their own, by their text without package prefixes.
var causeSentences = map[string]string{
	// worker's errShutdown, with on_shutdown: cancel (otherwise the run is
	// recorded interrupted, with the worker's own words).
	"shutdown grace period over": "this replica shut down and its worker.shutdown_grace ended before the run did (on_shutdown: cancel, so it is not queued again)",
}

// packagePrefixes are the packages whose errors may end a run's context.
var packagePrefixes = []string{"worker: ", "session: ", "slots: ", "jobs: ", "queue: ", "target: "}

// withoutPackages strips the package prefixes at the start of msg, and
// the "cancelled: " a cancel request's reason comes with.
func withoutPackages(msg string) string {
	for {
		trimmed := msg
		for _, p := range append(packagePrefixes, "cancelled: ") {
			trimmed = strings.TrimPrefix(trimmed, p)
		}
		if trimmed == msg || trimmed == "" {
			return msg
		}
		msg = trimmed
	}
}
