package election

import (
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// newRetry spaces out campaigns, member puts and reads against an etcd that
// fails, so a replica does not spin while the cluster is unreachable.
func newRetry() backoff.Backoff {
	return backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
}
