// Package logtest collects, in tests, the JSON log records a replica writes
// (log/slog's JSON handler, in process or on a child's stderr), so that a
// test can wait for a line or read them all.
package logtest

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Sink is an io.Writer that keeps each complete line written to it: a JSON
// object as a record, any other line as text (a race report, a panic). A
// line not ended yet waits for the next write. Safe for concurrent use.
type Sink struct {
	mu      sync.Mutex
	records []map[string]any
	other   []string
	partial bytes.Buffer
}

// Write never fails: what is not a record is kept as text.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial.Write(p)
	for {
		line, err := s.partial.ReadBytes('\n')
		if err != nil {
			s.partial.Write(line) // incomplete: keep for the next write
			return len(p), nil
		}
		line = bytes.TrimRight(line, "\r\n")
		var rec map[string]any
		if json.Unmarshal(line, &rec) == nil {
			s.records = append(s.records, rec)
		} else if len(line) > 0 {
			s.other = append(s.other, string(line))
		}
	}
}

// Find returns the first record whose msg is msg, or nil.
func (s *Sink) Find(msg string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.records {
		if rec["msg"] == msg {
			return rec
		}
	}
	return nil
}

// Records is a copy of the records so far, in the order written.
func (s *Sink) Records() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.records...)
}

// Other is a copy of the lines so far that were not JSON records.
func (s *Sink) Other() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.other...)
}
