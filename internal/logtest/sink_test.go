package logtest

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
)

// Records split across writes are kept whole, once each; lines that are
// not JSON are kept apart, and Find returns the first record of a message.
func TestSinkKeepsRecordsAndOtherLines(t *testing.T) {
	s := &Sink{}
	log := slog.New(slog.NewJSONHandler(s, nil))
	log.Info("api listening", "addr", "127.0.0.1:1")
	for _, part := range []string{`{"msg":"spl`, `it","n":1}` + "\n" + "WARNING: DATA", " RACE\n", `{"msg":"split","n":2}` + "\n"} {
		if n, err := fmt.Fprint(s, part); err != nil || n != len(part) {
			t.Fatalf("Write(%q) = %d, %v", part, n, err)
		}
	}
	if rec := s.Find("api listening"); rec == nil || rec["addr"] != "127.0.0.1:1" {
		t.Errorf("Find(api listening) = %v", rec)
	}
	if rec := s.Find("split"); rec == nil || rec["n"] != 1.0 {
		t.Errorf("Find(split) = %v, want the first one (n 1)", rec)
	}
	if s.Find("never") != nil {
		t.Error("Find found a message never written")
	}
	if got := len(s.Records()); got != 3 {
		t.Errorf("%d records, want 3: %v", got, s.Records())
	}
	if got, want := s.Other(), []string{"WARNING: DATA RACE"}; !slices.Equal(got, want) {
		t.Errorf("Other() = %q, want %q", got, want)
	}
}
