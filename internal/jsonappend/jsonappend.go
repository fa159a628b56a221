// Package jsonappend writes the few JSON values a run stores on its hot
// path (its slot's value, its record, its last success) by appending to a
// buffer, byte for byte as encoding/json writes them: reflection and the
// compaction of every time.Time's MarshalJSON output cost a replica more
// than the run's own transactions' building (docs/performance.md,
// "Profile"). Anything unusual (a string to escape, a time outside what
// RFC 3339 spells) goes through encoding/json itself, so the bytes never
// differ; each encoder's test compares them with encoding/json's.
package jsonappend

import (
	"encoding/json"
	"strconv"
	"time"
)

// String appends s as a JSON string, escaped as encoding/json escapes it
// (HTML characters included).
func String(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Time appends t as encoding/json writes a time.Time (RFC 3339 with
// nanoseconds, quoted).
func Time(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		q, err := t.MarshalJSON()
		if err != nil {
			// Where encoding/json fails (a year past 9999): null, which
			// decodes as the zero time, rather than a value no decoder
			// reads. Callers store times of this era.
			return append(b, "null"...)
		}
		return append(b, q...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// Int appends n.
func Int(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// Field appends a member's name and colon, after a comma unless b ends an
// object's opening brace.
func Field(b []byte, name string) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}
