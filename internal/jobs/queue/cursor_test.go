package queue

import (
	"testing"
	"time"
)

// The cursor keeps the format older versions write, so leaders of older
// versions and of the lean protocol (internal/jobs/assign) read what the
// others wrote (docs/protocol.md, "Mixed versions").
func TestCursorKeepsTodaysFormat(t *testing.T) {
	at := time.Date(2026, 11, 25, 18, 0, 1, 250_000_000, time.FixedZone("CET", 3600))
	if got := EncodeCursor(at); got != "2026-11-25T17:00:01.25Z" {
		t.Fatalf("EncodeCursor = %s", got)
	}
	back, err := DecodeCursor([]byte(EncodeCursor(at)))
	if err != nil || !back.Equal(at) {
		t.Fatalf("DecodeCursor = %v, %v", back, err)
	}
}
