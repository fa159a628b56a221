package target

import (
	"errors"
	"strings"
)

// cancelledWhy is the record's error of a run its caller cancelled, in the
// words of the person reading the run (docs/operations.md): what stopped
// it, without the package chain the cause carries for logs.
func cancelledWhy(cause error) string {
	return "run cancelled: " + causeWords(cause)
}

// causeWords says why a run's context ended: the cause's own sentence for
// people when it has one (the session's and the worker's shutdown carry
// one), else the cause's text less the package prefixes in front of it.
func causeWords(cause error) string {
	var m interface{ UserMessage() string }
	switch {
	case cause == nil:
		return "its context ended"
	case errors.As(cause, &m):
		return m.UserMessage()
	}
	return withoutPackages(cause.Error())
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
