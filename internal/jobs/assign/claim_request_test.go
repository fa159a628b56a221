package assign

import (
	"context"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/etcdsched/scheduler/internal/slots"
)

// sent is a pb.KVClient that keeps the transaction clientv3 sends and
// answers nothing: what clientv3's KV would put on the wire.
type sent struct {
	pb.KVClient
	req *pb.TxnRequest
}

func (s *sent) Txn(_ context.Context, req *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	s.req = req
	return &pb.TxnResponse{}, nil
}

// viaClientv3 is a chunk's claim as it was written through clientv3's Op
// and Cmp before claimRequest built it as protobuf: the reference the
// differential test holds claimRequest to.
func viaClientv3(c *Claimer, lease clientv3.LeaseID, a *Assignment, rev int64, marker, markerValue string, rs []Run) *pb.TxnRequest {
	then := []clientv3.Op{clientv3.OpPut(marker, markerValue)}
	for _, r := range rs {
		runID := a.RunID(r.Job)
		holder := r.Holder
		if holder == "" {
			holder = a.Worker
		}
		value := slots.Value{RunID: runID, Holder: holder, StartedAt: r.StartedAt.UTC(), ScheduledAt: a.At.UTC()}.Encode()
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(c.keys.Record(r.Job, runID)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(c.keys.JobQueue(r.Job)), "=", 0).WithPrefix(),
		}
		var puts []clientv3.Op
		for _, k := range c.runKeys(r) {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
			puts = append(puts, clientv3.OpPut(k, string(value), clientv3.WithLease(lease)))
		}
		then = append(then, clientv3.OpTxn(cmps, puts, nil))
	}
	s := &sent{}
	_, _ = clientv3.NewKVFromKVClient(s, nil).Txn(context.Background()).
		If(clientv3.Compare(clientv3.ModRevision(a.Key(c.keys)), "=", rev)).Then(then...).Commit()
	return s.req
}

// claimChunkOf is a chunk of n runs of assignment st: every third with a
// shared resource's slot, every fourth named for another holder.
func claimChunkOf(e *env, n int) (Stored, []Run) {
	jobs := make([]string, n)
	rs := make([]Run, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf("j%03d", i)
		rs[i] = run(jobs[i], i%3)
		if i%3 == 0 {
			rs[i].Resources = []ResourceSlot{{Name: "db", Index: i}}
		}
		if i%4 == 0 {
			rs[i].Holder = "r2"
		}
	}
	return e.authorize(e.elect("a"), "w1", jobs...), rs
}

// The claim built as protobuf is, field for field, the request clientv3
// sent for the same chunk: the same compares (the waiting range's end
// included), the same slot values under the same lease, the same marker.
func TestClaimRequestIsWhatClientv3Sends(t *testing.T) {
	e := newEnv(t)
	st, rs := claimChunkOf(e, 40)
	c := e.store.Claimer()
	lease := e.lease()
	marker, value := layout.ClaimMarker(st.Worker, st.At, st.Group, 3), encodeMarker([]string{"j000"}, true)
	got := c.claimRequest(lease, &st.Assignment, st.ModRevision, marker, value, rs)
	want := viaClientv3(c, lease, &st.Assignment, st.ModRevision, marker, value, rs)
	if !proto.Equal(got, want) {
		t.Fatalf("claim request built as protobuf differs from clientv3's:\n got %v\nwant %v", got, want)
	}
	if put := got.Success[1].GetRequestTxn().Success[0].GetRequestPut(); put.Lease != int64(lease) {
		t.Fatalf("a run's slot is put under lease %x, want %x", put.Lease, lease)
	}
}

// BenchmarkClaimRequest builds a chunk of 40 runs' claim both ways: as
// protobuf (claimRequest) and through clientv3, as the claim was built
// before.
func BenchmarkClaimRequest(b *testing.B) {
	e := newEnv(b)
	st, rs := claimChunkOf(e, 40)
	c := e.store.Claimer()
	marker := layout.ClaimMarker(st.Worker, st.At, st.Group, 0)
	b.Run("protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.claimRequest(7, &st.Assignment, st.ModRevision, marker, "[]", rs)
		}
	})
	b.Run("clientv3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = viaClientv3(c, 7, &st.Assignment, st.ModRevision, marker, "[]", rs)
		}
	})
}
