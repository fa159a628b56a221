package txnbatch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

// recordingKV passes transactions to a real client, noting each commit's
// shape and, while hold is set, holding each commit until the test lets it
// go: so a test can queue transactions behind a commit in flight without
// timing anything.
type recordingKV struct {
	clientv3.KV
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

func newRecordingKV(kv clientv3.KV) *recordingKV {
	return &recordingKV{KV: kv, started: make(chan commitShape, 1024)}
}

func (k *recordingKV) Txn(ctx context.Context) clientv3.Txn {
	return &recordingTxn{Txn: k.KV.Txn(ctx), kv: k, ctx: ctx}
}

func (k *recordingKV) shapes() []commitShape {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]commitShape(nil), k.commits...)
}

type recordingTxn struct {
	clientv3.Txn
	kv   *recordingKV
	ctx  context.Context
	cmps int
	then []clientv3.Op
}

func (t *recordingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = len(cs)
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *recordingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = ops
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *recordingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *recordingTxn) Commit() (*clientv3.TxnResponse, error) {
	shape := commitShape{members: 1, plain: true}
	if t.cmps == 0 && len(t.then) > 1 {
		nested := true
		for _, op := range t.then {
			nested = nested && op.IsTxn()
		}
		if nested {
			shape = commitShape{members: len(t.then)}
		}
	}
	t.kv.mu.Lock()
	t.kv.commits = append(t.kv.commits, shape)
	hold := t.kv.hold
	t.kv.mu.Unlock()
	t.kv.started <- shape
	if hold != nil {
		select {
		case <-hold:
		case <-t.ctx.Done():
			return nil, t.ctx.Err()
		}
	}
	return t.Txn.Commit()
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
