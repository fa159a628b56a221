package txnbatch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

// recordingKV passes transactions to a real client's KV service, noting
// each commit's shape and, while hold is set, holding each commit until the
// test lets it go: so a test can queue transactions behind a commit in
// flight without timing anything.
type recordingKV struct {
	pb.KVClient
	cli     *clientv3.Client
	hold    chan struct{} // when set, each commit waits for a value
	started chan commitShape

	mu      sync.Mutex
	commits []commitShape
}

// commitShape is what one commit carried: members nested transactions (a
// batch), or one plain transaction (members 1, plain).
type commitShape struct {
	members int
	plain   bool
}

func newRecordingKV(cli *clientv3.Client) *recordingKV {
	return &recordingKV{KVClient: clientv3.RetryKVClient(cli), cli: cli, started: make(chan commitShape, 1024)}
}

func (k *recordingKV) shapes() []commitShape {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]commitShape(nil), k.commits...)
}

func (k *recordingKV) Txn(ctx context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	shape := commitShape{members: 1, plain: true}
	if len(req.Compare) == 0 && len(req.Success) > 1 {
		nested := true
		for _, op := range req.Success {
			nested = nested && op.GetRequestTxn() != nil
		}
		if nested {
			shape = commitShape{members: len(req.Success)}
		}
	}
	k.mu.Lock()
	k.commits = append(k.commits, shape)
	hold := k.hold
	k.mu.Unlock()
	k.started <- shape
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return k.KVClient.Txn(ctx, req, opts...)
}

// holdCommits makes every later commit wait for release.
func (k *recordingKV) holdCommits() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hold = make(chan struct{})
}

// releaseAll lets every commit, held or later, go.
func (k *recordingKV) releaseAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.hold != nil {
		close(k.hold)
		k.hold = nil
	}
}

// nextCommit waits for the next commit to start and returns its shape.
func nextCommit(t *testing.T, k *recordingKV) commitShape {
	t.Helper()
	select {
	case s := <-k.started:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("no commit started")
		return commitShape{}
	}
}

// nextMembers waits for the next n commits and returns how many members
// each carried.
func nextMembers(t *testing.T, k *recordingKV, n int) []int {
	t.Helper()
	var members []int
	for range n {
		members = append(members, nextCommit(t, k).members)
	}
	return members
}

// waitQueued waits until n transactions wait behind the commit in flight.
func waitQueued(t *testing.T, c *Committer, n int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d transactions queued", n), func() (bool, string) {
		got := c.Waiting()
		return got == n, fmt.Sprintf("%d queued", got)
	})
}
