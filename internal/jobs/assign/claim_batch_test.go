package assign

import (
	"context"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// gatedKV holds each commit until the test opens its gate, telling how
// many transactions each nests (0: a plain one).
type gatedKV struct {
	pb.KVClient
	gate    chan struct{}
	members chan int
}

func (k *gatedKV) Txn(ctx context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	n := 0
	if len(req.Compare) == 0 && len(req.Success) > 1 && req.Success[0].GetRequestTxn() != nil {
		n = len(req.Success)
	}
	k.members <- n
	select {
	case <-k.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return k.KVClient.Txn(ctx, req, opts...)
}

// The chunks of an instant that reach the group committer together go in
// one commit and keep each its own outcome, as alone: one claims with the
// commit's revision as token, one is refused for a run's record (read at
// the revision its compares saw), one finds its assignment moved.
func TestChunksShareACommitAndKeepTheirOutcomes(t *testing.T) {
	e := newEnv(t)
	kv := &gatedKV{KVClient: clientv3.RetryKVClient(e.cli), gate: make(chan struct{}), members: make(chan int, 16)}
	batch, err := txnbatch.NewOn(kv, e.cli, txnbatch.Options{InFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(batch.Close)
	if e.store, err = New(e.cli, layout, e.clock, Options{Batch: batch}); err != nil {
		t.Fatal(err)
	}
	fence := e.elect("a")
	claimed, refused, moved := e.authorize(fence, "w1", "a", "b"), e.authorize(fence, "w2", "c"), e.authorize(fence, "w3", "d")
	e.put(layout.Record("c", refused.RunID("c")), "{}")
	e.put(moved.Key(layout), moved.Encode()) // written anew: its claim compares the old revision
	e.clock.Advance(instant.Sub(e.clock.Now()))

	// A first commit in flight, held: the chunks queue behind it.
	first := make(chan error, 1)
	go func() {
		_, err := batch.Commit(e.ctx(), txnbatch.Txn{Then: []clientv3.Op{clientv3.OpPut("/sched/first", "x")}})
		first <- err
	}()
	if n := <-kv.members; n != 0 {
		t.Fatalf("the first commit nests %d", n)
	}
	type result struct {
		claims []Claim
		err    error
	}
	lease := e.lease()
	send := func(st Stored, rs ...Run) <-chan result {
		out := make(chan result, 1)
		go func() {
			cs, err := e.store.Claimer().ClaimChunk(e.ctx(), lease, st.Assignment, st.ModRevision, 0, rs)
			out <- result{cs, err}
		}()
		return out
	}
	outs := []<-chan result{send(claimed, run("a", 0), run("b", 0)), send(refused, run("c", 0)), send(moved, run("d", 0))}
	poll.Until(t, 30*time.Second, "three chunks queued", func() (bool, string) {
		return batch.Waiting() == 3, ""
	})
	close(kv.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := <-kv.members; n != 3 {
		t.Fatalf("the chunks went in a commit of %d, want the three nested", n)
	}
	c, r, m := <-outs[0], <-outs[1], <-outs[2]
	if c.err != nil || c.claims[0].Outcome != Claimed || c.claims[1].Outcome != Claimed {
		t.Fatalf("chunk beside a refused and a gone one: %+v, %v", c.claims, c.err)
	}
	for _, job := range []string{"a", "b"} {
		if held := e.slotsOf(job); held[layout.Slot(job, 0)] != c.claims[0].Token {
			t.Fatalf("job %s holds %v, want its slot at the commit's revision %d", job, held, c.claims[0].Token)
		}
	}
	if r.err != nil || r.claims[0].Outcome != Refused || r.claims[0].Reason != RecordExists || r.claims[0].Revision != c.claims[0].Revision {
		t.Fatalf("chunk of a run with a record: %+v, %v; want refused (record exists) in the same commit", r.claims, r.err)
	}
	if !errors.Is(m.err, ErrGone) || m.claims[0].Outcome != Gone || len(e.slotsOf("d")) != 0 {
		t.Fatalf("chunk of a moved assignment: %+v, %v; want gone, no slot", m.claims, m.err)
	}
}
