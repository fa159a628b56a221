// Package assign holds the transactions of the lean run protocol
// (docs/protocol.md, issue 24) as a library: the leader authorizes each
// instant's ticks by writing one assignment per worker and instant with the
// jobs' cursors (Authorize); the worker claims an assignment's runs in
// chunks, each run a nested transaction that puts its slot keys under the
// session lease, with a lease-free marker naming the runs it tried
// (Claimer.ClaimChunk); the worker deletes what it finished with (Cleanup); the
// leader turns a dead worker's assignments into lost or missed records or
// moves their unclaimed runs to a live worker (Resolver.Resolve). The release is
// today's owner-checked one (internal/slots): the token ClaimChunk returns
// is the slot keys' CreateRevision, as a slots claim's is.
//
// A backup worker takes over a peer's assignment nobody claimed from by
// its turn (Steal), so a killed replica's ticks need not wait for its
// lease to expire. The engine uses this package by default: the leader
// (internal/jobs/leader) and the worker (internal/jobs/worker) both write
// through one Store, which hands the worker its Claimer and the leader its
// Resolver.
package assign

import "errors"

// Protocol is the run protocol a replica advertises in its member key
// (election.Member.Protocol), the highest of these it runs.
const Protocol = ReadsChunks

// The protocols, each a level of the one before.
const (
	// Lean: the replica's worker claims assignments. The leader assigns
	// runs only while every member advertises at least it.
	Lean = 2
	// SuccessApart: the replica reads a job's last success under
	// succeeded/ (keys.LastSuccess). A run's end puts it there only while
	// every member advertises at least it, under jobs/ otherwise.
	SuccessApart = 3
	// ReadsChunks: the replica reads chunk records (shed/, the ticks of an
	// instant a worker shed together, docs/design-shed.md) wherever it
	// reads a tick's record. A worker may write them only while every
	// member advertises at least it; nothing writes them yet.
	ReadsChunks = 4
)

var (
	// ErrConflict: a compare other than the fence failed (a cursor moved,
	// an assignment exists already or changed since it was read); nothing
	// of the failed transaction was written.
	ErrConflict = errors.New("assign: conflict")
	// ErrGone: the assignment a claim was made from no longer exists with
	// the revision read (it was moved or deleted); nothing was claimed.
	ErrGone = errors.New("assign: assignment gone")
	// ErrTooLarge: a transaction would exceed etcd's --max-txn-ops.
	ErrTooLarge = errors.New("assign: transaction too large")
	// ErrNotLeader: the leader's fence failed.
	ErrNotLeader = errors.New("assign: not leader")
	// ErrAlive: the worker being resolved has a member key again.
	ErrAlive = errors.New("assign: worker alive")
)
