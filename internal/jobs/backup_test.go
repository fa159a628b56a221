package jobs

import (
	"testing"
	"time"
)

// The average follows the claim round trips; what it adds to the claim
// lead and to a backup's wait is bounded.
func TestClaimLatency(t *testing.T) {
	var c claimLatency
	if c.extraLead() != 0 || c.backupWait() != 0 {
		t.Fatalf("no claims yet: lead +%s, backup +%s; want 0", c.extraLead(), c.backupWait())
	}
	for range 100 {
		c.observe(40 * time.Millisecond)
	}
	if got := c.extraLead(); got < 110*time.Millisecond || got > 120*time.Millisecond {
		t.Errorf("after 40ms round trips: lead +%s, want about 120ms", got)
	}
	if got := c.backupWait(); got < 75*time.Millisecond || got > 80*time.Millisecond {
		t.Errorf("after 40ms round trips: backup +%s, want about 80ms", got)
	}
	for range 100 {
		c.observe(10 * time.Second)
	}
	if c.extraLead() != maxExtraLead || c.backupWait() != maxBackupWait {
		t.Errorf("after 10s round trips: lead +%s, backup +%s; want the caps %s, %s", c.extraLead(), c.backupWait(), maxExtraLead, maxBackupWait)
	}
	for range 100 {
		c.observe(time.Millisecond)
	}
	if got := c.extraLead(); got > 5*time.Millisecond {
		t.Errorf("back to 1ms round trips: lead +%s", got)
	}
}
