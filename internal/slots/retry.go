package slots

import (
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// newRetry spaces out retries against an unreachable or leaderless cluster:
// re-reads of the view, and claims and releases whose outcome must be read
// back.
func newRetry() backoff.Backoff {
	return backoff.Backoff{Min: 50 * time.Millisecond, Max: 2 * time.Second}
}
