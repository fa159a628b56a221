package worker

import (
	"testing"
	"time"
)

// The average follows the claim round trips, and what it adds to a
// backup's wait is bounded.
func TestClaimLatency(t *testing.T) {
	var c claimLatency
	if c.backupWait() != 0 {
		t.Fatalf("no claims yet: backup +%s, want 0", c.backupWait())
	}
	for range 100 {
		c.observe(40 * time.Millisecond)
	}
	if got := c.backupWait(); got < 75*time.Millisecond || got > 80*time.Millisecond {
		t.Errorf("after 40ms round trips: backup +%s, want about 80ms", got)
	}
	for range 100 {
		c.observe(10 * time.Second)
	}
	if c.backupWait() != maxBackupWait {
		t.Errorf("after 10s round trips: backup +%s, want the cap %s", c.backupWait(), maxBackupWait)
	}
	for range 100 {
		c.observe(time.Millisecond)
	}
	if got := c.backupWait(); got > 5*time.Millisecond {
		t.Errorf("back to 1ms round trips: backup +%s", got)
	}
}
