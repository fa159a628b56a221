package slots

import (
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// etcdRetry spaces out retries against an unreachable or leaderless
// cluster: re-reads of the view, and claims and releases whose outcome must
// be read back. 50ms finds an etcd back from a leader election at once; 2s
// bounds how late a replica notices the cluster is back; half of each delay
// is random so the replicas that lost etcd together do not retry together.
var etcdRetry = backoff.Policy{Min: 50 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}
