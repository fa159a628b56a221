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
	if got := c.extraLead(); got < 112*time.Millisecond || got > 120*time.Millisecond {
		t.Errorf("after 40ms round trips: claim lead +%s, want about 120ms", got)
	}
	for range 100 {
		c.observe(10 * time.Second)
	}
	if c.backupWait() != maxBackupWait {
		t.Errorf("after 10s round trips: backup +%s, want the cap %s", c.backupWait(), maxBackupWait)
	}
	if c.extraLead() != maxExtraLead {
		t.Errorf("after 10s round trips: claim lead +%s, want the cap %s", c.extraLead(), maxExtraLead)
	}
	for range 100 {
		c.observe(time.Millisecond)
	}
	if got := c.backupWait(); got > 5*time.Millisecond {
		t.Errorf("back to 1ms round trips: backup +%s", got)
	}
}
