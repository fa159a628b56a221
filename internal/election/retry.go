package election

import (
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// etcdRetry spaces out campaigns, member puts and reads against an etcd
// that fails, so a replica does not spin while the cluster is unreachable.
// 100ms: a campaign is a few requests, not worth repeating faster; 2s bounds
// how long a healed cluster waits for its candidates; half of each delay is
// random so the candidates that lost etcd together do not campaign in
// lockstep.
var etcdRetry = backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}
