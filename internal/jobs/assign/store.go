package assign

import (
	"errors"
	"fmt"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// DefaultMaxTxnOps is etcd's default --max-txn-ops: the most compares, and
// the most operations, one transaction (or one nested transaction) holds.
const DefaultMaxTxnOps = 128

// Options tune a Store; zero values take the defaults.
type Options struct {
	// MaxTxnOps is the server's --max-txn-ops.
	MaxTxnOps int
}

// Store runs the protocol's transactions against one prefix.
type Store struct {
	kv     clientv3.KV
	keys   keys.Layout
	clock  clockwork.Clock
	maxOps int
}

// New is a Store writing through kv under layout; clock stamps the records
// Resolve writes and judges starting deadlines.
func New(kv clientv3.KV, layout keys.Layout, clock clockwork.Clock, opts Options) (*Store, error) {
	switch {
	case kv == nil:
		return nil, errors.New("assign: New needs an etcd KV")
	case layout.Prefix == "":
		return nil, errors.New("assign: New needs a key prefix")
	case clock == nil:
		return nil, errors.New("assign: New needs a clock")
	case opts.MaxTxnOps < 0 || opts.MaxTxnOps > 0 && opts.MaxTxnOps < 8:
		return nil, fmt.Errorf("assign: MaxTxnOps %d must be 0 (etcd's default, %d) or at least 8", opts.MaxTxnOps, DefaultMaxTxnOps)
	}
	if opts.MaxTxnOps == 0 {
		opts.MaxTxnOps = DefaultMaxTxnOps
	}
	return &Store{kv: kv, keys: layout, clock: clock, maxOps: opts.MaxTxnOps}, nil
}
