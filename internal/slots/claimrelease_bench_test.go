package slots

import (
	"testing"
)

// BenchmarkClaim and BenchmarkRelease time each half of
// BenchmarkClaimRelease alone (the other half runs untimed), as the
// worker's claim at due-25ms and its release at the end of a run.
func BenchmarkClaim(b *testing.B)   { benchClaimRelease(b, timeClaim) }
func BenchmarkRelease(b *testing.B) { benchClaimRelease(b, timeRelease) }
