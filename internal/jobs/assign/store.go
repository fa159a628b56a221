package assign

import (
	"errors"
	"fmt"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// DefaultMaxTxnOps is etcd's default --max-txn-ops: the most compares, and
// the most operations, one transaction (or one nested transaction) holds.
const DefaultMaxTxnOps = 128

// Options tune a Store, its Claimer and its Resolver; zero values take
// the defaults.
type Options struct {
	// MaxTxnOps is the server's --max-txn-ops.
	MaxTxnOps int
	// Batch carries the worker's claims (Claimer.ClaimChunk) and cleanups
	// (Store.Cleanup) in the replica's group commits beside its releases;
	// nil gives the Store a committer of its own. A worker claims and
	// cleans up each assignment of an instant, a dozen and more at a
	// burst: alone, each was a raft entry, fsync and apply of its own, and
	// together the most of the revisions a run made (docs/performance.md,
	// "Bounds"). Its MaxTxnOps is the server's too: one that believes a
	// wider bound has its batches refused and their members sent alone.
	Batch *txnbatch.Committer
}

// protocol is what every transaction of the protocol is written with: the
// etcd KV, the key layout, the clock, etcd's limit on a transaction's
// operations, and what they share of a worker: whether it lives and the
// compares that say so (alive.go), the read of its assignments and markers
// and the deletes that clean one up (snapshot.go). The Store, the Claimer
// and the Resolver each write through one; it holds no state that changes.
type protocol struct {
	kv     clientv3.KV
	keys   keys.Layout
	clock  clockwork.Clock
	maxOps int
	batch  *txnbatch.Committer // Options.Batch, or the Store's own
}

// Store owns the assignments' life outside a claim and a resolution: the
// leader authorizes them (Authorize), a backup worker takes one over
// (Steal, StealAhead), a worker reads and cleans up its own (Read,
// Cleanup). It hands out the worker's Claimer and the leader's Resolver,
// which write through the same prefix, client and clock.
type Store struct {
	protocol
	claimer  *Claimer
	resolver *Resolver
}

// Claimer owns the worker's side of a claim: a chunk's claim transaction
// (ClaimChunk: the claim marker and each run's slots under the worker's
// lease) and the start mark of a chunk claimed ahead (StartChunk).
type Claimer struct{ protocol }

// Resolver owns the leader's resolution of a dead worker's assignments
// (Resolve): what each run they name becomes, lost, moved or missed, and
// the fenced transactions that write it and delete the assignments.
type Resolver struct{ protocol }

// New is a Store writing through kv under layout; clock stamps the records
// Resolve writes and judges starting deadlines.
func New(kv *clientv3.Client, layout keys.Layout, clock clockwork.Clock, opts Options) (*Store, error) {
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
	if opts.Batch == nil {
		// Its goroutines live only while a commit is in flight, and each
		// commit ends once its callers have all gone: nothing to close.
		var err error
		if opts.Batch, err = txnbatch.New(kv, txnbatch.Options{MaxTxnOps: opts.MaxTxnOps}); err != nil {
			return nil, err
		}
	}
	p := protocol{kv: kv, keys: layout, clock: clock, maxOps: opts.MaxTxnOps, batch: opts.Batch}
	return &Store{protocol: p, claimer: &Claimer{p}, resolver: &Resolver{p}}, nil
}

// Claimer is the worker's claims, through the Store's prefix and client.
func (s *Store) Claimer() *Claimer { return s.claimer }

// Resolver is the leader's resolution of dead workers, through the
// Store's prefix and client.
func (s *Store) Resolver() *Resolver { return s.resolver }
