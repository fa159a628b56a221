package tracingtest

import (
	"regexp"
	"strings"
)

// traceParent is version 00 of the W3C traceparent: trace id, parent id,
// flags, in lower-case hex.
var traceParent = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$`)

// ParseTraceParent checks s as W3C Trace Context asks a receiver to (the
// ids all zeros are invalid) and returns its trace and parent span ids.
func ParseTraceParent(s string) (traceID, spanID string, ok bool) {
	m := traceParent.FindStringSubmatch(s)
	if m == nil || m[1] == strings.Repeat("0", 32) || m[2] == strings.Repeat("0", 16) {
		return "", "", false
	}
	return m[1], m[2], true
}
