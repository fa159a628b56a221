package election

import (
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	// ErrNotLeader: this replica holds no confirmed leadership.
	ErrNotLeader = errors.New("election: not leader")
	// ErrNoLeader: nobody holds the election right now.
	ErrNoLeader = errors.New("election: no leader")
	// ErrLeadershipLost: the election key was deleted or replaced while this
	// replica led; it is the cause of the leader context's cancellation.
	ErrLeadershipLost = errors.New("election: leadership lost")
	// ErrNotConfirmed: Campaign returned, but the key it created is gone or is
	// not the oldest under the prefix, or the session ended. etcd's Campaign
	// only waits for older keys to go and never looks at its own, so it
	// reports a win for a session that expired while it waited.
	ErrNotConfirmed = errors.New("election: campaign returned without leadership")
)

// Leadership is one confirmed win: the election key and its create revision.
// The key's create revision changes whenever anyone wins again, so the pair
// identifies this term of office and nothing else.
type Leadership struct {
	Key   string
	Rev   int64
	Lease clientv3.LeaseID
}

// Fence is the comparison every leader write carries (docs/design.md#the-safety-rules, rule 1): the
// write applies only while this term's election key still exists. Once the
// key is deleted (resign, lease expiry) a stale leader's writes fail, however
// late they reach etcd.
func (l Leadership) Fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.Key), "=", l.Rev)
}
