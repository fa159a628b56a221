package assign

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/slots"
)

// Run is one run a chunk tries to claim: its job, the slot indexes picked
// (job slot, or the concurrency key's, and one per shared resource) and the
// time it starts.
type Run struct {
	Job       string
	Key       string // concurrency key; "" for the job's own slots
	Slot      int
	Resources []ResourceSlot
	StartedAt time.Time
	// Holder is what the slot value names as the run's holder: the
	// replica id, as a queue-path claim names it (the API's and the
	// targets' holder); "" names the assignment's worker.
	Holder string
}

// ResourceSlot is slot Index of a shared resource.
type ResourceSlot struct {
	Name  string
	Index int
}

// Outcome is what a chunk's transaction did with one run.
type Outcome string

const (
	Claimed Outcome = "claimed"
	Refused Outcome = "refused"
	Gone    Outcome = "gone" // the assignment was moved or deleted
)

// Reason is which compare refused a run.
type Reason string

const (
	RecordExists Reason = "record exists"
	SlotTaken    Reason = "slot taken"
	Waiting      Reason = "a run of the job waits in the queue"
)

// Claim is the result for one run of a chunk.
type Claim struct {
	Job     string
	RunID   string
	Outcome Outcome
	Token   int64  // Claimed: the slot keys' CreateRevision
	Reason  Reason // Refused
	// Holder (SlotTaken) is the value of the slot that refused it (of
	// several, the one whose run started last): when that run started and
	// which tick it is, which tell an overlap at the run's instant from a
	// slot an elder took after it (worker/assigned_claim.go).
	Holder slots.Value
	// Queued (SlotTaken): a run of the job was in its queue (pending,
	// running or due later) at the revision the compares saw. None was:
	// no queued elder goes first, and the holder is a lean run (or a
	// queue run recorded lost whose lease still holds the slot), which
	// the queue path's fair order does not see (worker/assigned_claim.go).
	Queued bool
	// Revision is the chunk's commit (not Gone): its claim marker's
	// ModRevision, which Cleanup compares.
	Revision int64
	// Ahead: the chunk was sent before the assignment's instant. Its
	// marker says its runs have not started, and they start only once
	// StartChunk has said otherwise.
	Ahead bool
}

// ClaimChunk claims runs of assignment a, read with ModRevision rev, in
// one request: If(ModRevision(a) == rev) Then(put the claim marker of
// chunk, naming every run tried, and per run If(no record, its slots free,
// nobody of its job waiting in queue/<job>/) Then(put its slots under lease)),
// and reads what refused a run after it (readRefusals). An assignment
// moved, deleted or written anew since it was read fails the whole request
// (ErrGone, every run Gone): the
// leader rewrites one to withdraw ticks of a paused, changed or removed job
// (only while no chunk has claimed from it), and a worker holding the
// version before must not claim a withdrawn run. A claim marker does not
// change the assignment's ModRevision, so later chunks compare the same. A chunk sent again
// after its response was lost (the same runs and slot picks) reads its own
// slots back and reports them Claimed with their token.
//
// A chunk sent before the instant (by the store's clock) is claimed
// ahead: its marker says so (Claim.Ahead), and its runs must not start
// before StartChunk. Resolve moves or records missed the runs of a dead
// worker's chunk still ahead, and records lost only those that may have
// started.
func (c *Claimer) ClaimChunk(ctx context.Context, lease clientv3.LeaseID, a Assignment, rev int64, chunk int, rs []Run) ([]Claim, error) {
	if err := c.checkChunk(a, rev, chunk, rs); err != nil {
		return nil, err
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Job
	}
	ahead := c.clock.Now().Before(a.At)
	marker := c.keys.ClaimMarker(a.Worker, a.At, a.Group, chunk)
	resp, err := c.sendTxn(ctx, c.claimRequest(lease, &a, rev, marker, encodeMarker(names, ahead), rs))
	if err != nil {
		return nil, fmt.Errorf("assign: claim chunk %d of worker %s at %s: %w", chunk, a.Worker, a.Key(c.keys), err)
	}
	claims := make([]Claim, len(rs))
	for i, r := range rs {
		claims[i] = Claim{Job: r.Job, RunID: a.RunID(r.Job), Outcome: Gone}
	}
	if !resp.Succeeded {
		return claims, fmt.Errorf("assign: claim chunk %d from %s: %w", chunk, a.Key(c.keys), ErrGone)
	}
	var refused []int
	for i := range rs {
		claims[i].Revision, claims[i].Ahead = resp.Header.Revision, ahead
		if resp.Responses[1+i].GetResponseTxn().Succeeded {
			claims[i].Outcome, claims[i].Token = Claimed, resp.Header.Revision
			continue
		}
		claims[i].Outcome = Refused
		refused = append(refused, i)
	}
	if len(refused) > 0 {
		// The request wrote its marker, so the compares saw the revision
		// before its own.
		if err := c.readRefusals(ctx, lease, resp.Header.Revision-1, rs, claims, refused); err != nil {
			// Sent again, the chunk finds what this one claimed held by
			// its runs and reports it claimed, as after a lost answer.
			return nil, fmt.Errorf("assign: claim chunk %d of worker %s at %s: %w", chunk, a.Worker, a.Key(c.keys), err)
		}
	}
	return claims, nil
}

func (c *Claimer) checkChunk(a Assignment, rev int64, chunk int, rs []Run) error {
	if err := a.Validate(); err != nil {
		return err
	}
	where := fmt.Sprintf("claim chunk %d of worker %s at %s", chunk, a.Worker, a.Key(c.keys))
	if rev <= 0 || chunk < 0 || len(rs) == 0 {
		return fmt.Errorf("assign: %s: needs the assignment's revision, a chunk number >= 0 and runs", where)
	}
	// etcd gives a nested transaction what its parent's widest list
	// leaves of --max-txn-ops (checkTxnRequest): the chunk costs the
	// marker and one nested transaction per run, plus the widest run's
	// compares (record, waiters, each slot).
	widest := 0
	for _, r := range rs {
		widest = max(widest, 2+1+len(r.Resources))
	}
	if cost := 1 + len(rs) + widest; cost > c.maxOps {
		return fmt.Errorf("assign: %s: %d runs cost %d operations, over etcd's --max-txn-ops %d: claim in smaller chunks: %w", where, len(rs), cost, c.maxOps, ErrTooLarge)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if !a.Has(r.Job) || seen[r.Job] {
			return fmt.Errorf("assign: %s: job %q is not in the assignment or is tried twice", where, r.Job)
		}
		seen[r.Job] = true
		// Nested transactions of one request must not put one key twice:
		// etcd refuses the whole request.
		for _, k := range c.runKeys(r) {
			if seen[k] {
				return fmt.Errorf("assign: %s: slot %s is picked for two runs", where, k)
			}
			seen[k] = true
		}
	}
	return nil
}

// runKeys are the slot keys a run puts, its job slot first.
func (c *Claimer) runKeys(r Run) []string {
	ks := []string{c.keys.SlotOf(r.Job, r.Key, r.Slot)}
	for _, res := range r.Resources {
		ks = append(ks, c.keys.ResourceSlot(res.Name, res.Index))
	}
	return ks
}
