// Package txnbatch commits the transactions of concurrent callers together:
// one etcd transaction whose Then holds each caller's transaction as a
// nested one (group commit). Each keeps its own compares and gets its own
// outcome; the batch costs one round trip, one raft entry, one revision and
// one fsync.
//
// A transaction is sent at once while fewer than Options.InFlight commits
// are in flight; what arrives while they all are waits for the first to
// return and goes in its next commit, so batching costs no wait of its own
// (no window, no timer). Transactions that touch the same keys never share a
// commit (see footprint), and when etcd still refuses a batch as a whole,
// each member is sent again alone, so no caller sees an error caused by a
// neighbour.
package txnbatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrClosed: the committer was closed before the transaction was sent.
	// The error also matches ErrNotSent.
	ErrClosed = errors.New("txnbatch: closed")
	// ErrNotSent: the caller's context ended before the transaction was
	// sent, so it was certainly not applied. The error also wraps the
	// context's error.
	ErrNotSent = errors.New("txnbatch: not sent")
)

// Txn is one caller's transaction: Then applies if every compare of If
// holds. A caller that wants to read what refused it nests a transaction
// with its own else in Then (the slot claim does). A caller that builds
// etcd's request itself sets Request instead of If and Then (request.go);
// Commit refuses one with both.
type Txn struct {
	If      []clientv3.Cmp
	Then    []clientv3.Op
	Request *pb.TxnRequest
}

// Options bound a batch; zero values take the defaults, which fit etcd's
// default limits.
type Options struct {
	// MaxMembers bounds the transactions in one commit (default 64).
	MaxMembers int
	// MaxTxnOps is the server's --max-txn-ops (default 128). A batch of K
	// members costs K plus its dearest member's cost (see footprint.add).
	MaxTxnOps int
	// MaxBytes bounds a batch's estimated size (default 512 KiB, under
	// the server's default --max-request-bytes of 1.5 MiB).
	MaxBytes int
	// InFlight is how many commits may be in flight at once (default 4).
	// A transaction is sent at once while fewer are; what comes while
	// all are waits for the first to return. One alone would make every
	// transaction of a busy replica wait behind the commit in flight, and
	// a run's claim and release pay that wait; with a few, a queue forms
	// only when etcd is slower than the replica's rate of transactions,
	// which is when batching pays.
	InFlight int
	// Reg registers the committer's metrics; nil registers nothing.
	Reg prometheus.Registerer
}

// Committer batches transactions onto one etcd client. Its goroutines exist
// only while a commit is in flight; Close ends them.
type Committer struct {
	kv       pb.KVClient
	callOpts []grpc.CallOption
	opts     Options
	metrics  *metrics
	ctx      context.Context // ends at Close: cancels commits in flight
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	queue    []*call
	inflight int
	closed   bool
}

type call struct {
	ctx  context.Context
	req  *pb.TxnRequest
	fp   footprint
	done chan result // buffered: written once
	sent bool        // guarded by Committer.mu
}

type result struct {
	resp *clientv3.TxnResponse
	err  error
}

// New is a committer on client's connection.
func New(client *clientv3.Client, opts Options) (*Committer, error) {
	return NewOn(clientv3.RetryKVClient(client), client, opts)
}

// NewOn is a committer that sends through kv, a client's KV service (or a
// test's wrapper of it), with the call options of client's own KV.
func NewOn(kv pb.KVClient, client *clientv3.Client, opts Options) (*Committer, error) {
	if kv == nil || client == nil {
		return nil, errors.New("txnbatch: a committer needs a KV service and its client")
	}
	if opts.MaxMembers <= 0 {
		opts.MaxMembers = 64
	}
	if opts.MaxTxnOps <= 0 {
		opts.MaxTxnOps = 128
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 512 << 10
	}
	if opts.InFlight <= 0 {
		opts.InFlight = 4
	}
	m, err := newMetrics(opts.Reg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Committer{kv: kv, callOpts: callOptions(client), opts: opts, metrics: m, ctx: ctx, cancel: cancel}, nil
}

// Commit applies t, alone or beside others, and returns its own outcome:
// Succeeded and the responses of its Then, with the header of the
// commit that carried it (its revision is that of t's writes).
//
// Errors: ErrNotSent (wrapping ctx's error) when ctx ended before t was
// sent, so it was not applied; ctx's error when ctx ended after it was sent,
// so the outcome is unknown, as with a lost response; ErrClosed; otherwise
// the server's error for t, or for its commit when that was not caused by a
// neighbour.
func (c *Committer) Commit(ctx context.Context, t Txn) (*clientv3.TxnResponse, error) {
	if ctx.Err() != nil {
		return nil, notSent(ctx)
	}
	if t.Request != nil && (len(t.If) > 0 || len(t.Then) > 0) {
		return nil, errors.New("txnbatch: a transaction given both as a request and as If and Then: not sent")
	}
	req := t.request()
	cl := &call{ctx: ctx, req: req, fp: footprintOf(req), done: make(chan result, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	c.queue = append(c.queue, cl)
	if c.inflight < c.opts.InFlight {
		c.inflight++
		c.wg.Add(1)
		go c.flush()
	}
	c.mu.Unlock()
	select {
	case r := <-cl.done:
		return r.resp, r.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if !cl.sent {
		c.removeLocked(cl)
		c.mu.Unlock()
		return nil, notSent(ctx)
	}
	c.mu.Unlock()
	select {
	case r := <-cl.done:
		return r.resp, r.err
	default:
		return nil, ctx.Err()
	}
}

// Waiting is how many transactions wait for a commit in flight to return.
func (c *Committer) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Close fails what is queued with ErrClosed, cancels the commits in flight
// (their callers see the outcome as unknown) and waits for them. It returns
// as soon as the client gives up on them, which it does at once.
func (c *Committer) Close() {
	c.mu.Lock()
	c.closed = true
	for _, cl := range c.queue {
		cl.done <- result{err: errClosed}
	}
	c.queue = nil
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// errClosed is what a transaction gets that Close kept from being sent.
var errClosed = fmt.Errorf("%w: %w", ErrClosed, ErrNotSent)

func notSent(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrNotSent, ctx.Err())
}

func (c *Committer) removeLocked(cl *call) {
	if i := slices.Index(c.queue, cl); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
	}
}

// flush commits batches until the queue is empty: a transaction queued
// while a commit is in flight is taken by the goroutine that sent it, as
// soon as it returns.
func (c *Committer) flush() {
	defer c.wg.Done()
	var taken, skipped keyset
	for {
		c.mu.Lock()
		batch := c.takeLocked(&taken, &skipped)
		if len(batch) == 0 {
			c.inflight--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.commit(batch)
	}
}

// takeLocked picks the next batch in queue order: members that fit the
// bounds and conflict neither with a member taken nor with one passed over
// before them, so conflicting transactions left in the queue keep the
// order they came in. (With several commits in flight, one may go beside
// a conflicting one in another commit, as two plain transactions would.)
func (c *Committer) takeLocked(taken, skipped *keyset) []*call {
	taken.reset()
	skipped.reset()
	var batch []*call
	cost, size := 0, 0
	rest := c.queue[:0]
	for i, cl := range c.queue {
		if cl.ctx.Err() != nil {
			cl.done <- result{err: notSent(cl.ctx)}
			continue
		}
		if len(batch) == c.opts.MaxMembers {
			rest = append(rest, c.queue[i:]...)
			break
		}
		fits := len(batch) == 0 ||
			(len(batch)+1+max(cost, cl.fp.cost) <= c.opts.MaxTxnOps && size+cl.fp.size <= c.opts.MaxBytes)
		if !fits || taken.conflicts(&cl.fp) || skipped.conflicts(&cl.fp) {
			skipped.add(&cl.fp)
			rest = append(rest, cl)
			continue
		}
		taken.add(&cl.fp)
		cl.sent = true
		batch = append(batch, cl)
		cost, size = max(cost, cl.fp.cost), size+cl.fp.size
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	return batch
}

// commit sends one batch and hands each member its outcome. One member goes
// as a plain transaction, so a lone caller's commit is what it would have
// sent itself.
func (c *Committer) commit(batch []*call) {
	c.metrics.members.Observe(float64(len(batch)))
	if len(batch) == 1 {
		cl := batch[0]
		cl.done <- c.alone(cl)
		return
	}
	ctx, done := c.sendCtx(batch)
	resp, err := c.send(ctx, nest(batch))
	done()
	switch {
	case err == nil:
		for i, cl := range batch {
			inner := resp.Responses[i].GetResponseTxn()
			cl.done <- result{resp: &clientv3.TxnResponse{Header: resp.Header, Succeeded: inner.Succeeded, Responses: inner.Responses}}
		}
	case neighbourly(err):
		// Not applied, and perhaps because of one member: each alone.
		c.metrics.fallbacks.Inc()
		var wg sync.WaitGroup
		for _, cl := range batch {
			wg.Go(func() { cl.done <- c.alone(cl) })
		}
		wg.Wait()
	default:
		for _, cl := range batch {
			cl.done <- result{err: err}
		}
	}
}

// alone sends one member as a plain transaction, unless its caller has
// gone: nothing of it was applied yet.
func (c *Committer) alone(cl *call) result {
	if cl.ctx.Err() != nil {
		return result{err: notSent(cl.ctx)}
	}
	ctx, done := c.sendCtx([]*call{cl})
	defer done()
	resp, err := c.send(ctx, cl.req)
	return result{resp: resp, err: err}
}

// sendCtx is the context of one commit: it ends when every member's caller
// has gone (nobody waits for the outcome any more) or at Close. A lone
// member's commit runs under its caller's context, values included.
func (c *Committer) sendCtx(batch []*call) (context.Context, func()) {
	if len(batch) == 1 {
		ctx, cancel := context.WithCancel(batch[0].ctx)
		stop := context.AfterFunc(c.ctx, cancel)
		return ctx, func() { stop(); cancel() }
	}
	ctx, cancel := context.WithCancel(c.ctx)
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, cl := range batch {
		stops[i] = context.AfterFunc(cl.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// neighbourly reports whether etcd refused a batch for a reason one member
// may have caused alone: a duplicate key, too many operations, a request
// too large, a lease not found, a compacted revision, a permission. Such a
// batch was not applied. A full disk or an overloaded server is the
// cluster's, not a member's: every member sees it.
func neighbourly(err error) bool {
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.OutOfRange, codes.PermissionDenied, codes.FailedPrecondition:
		return true
	}
	return false
}
