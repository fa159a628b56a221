package txnbatch

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// What etcd v3.7 refuses of nested transactions, which the footprint's
// rules are built on: read from checkTxnRequest and checkIntervals in
// etcdserver/api/v3rpc/key.go, checked here against the server.
func TestWhatEtcdRefusesOfNestedTransactions(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	put := func(k string) clientv3.Op { return clientv3.OpPut(k, "v") }
	del := func(k string) clientv3.Op { return clientv3.OpDelete(k) }
	nested := func(ops ...clientv3.Op) clientv3.Op { return clientv3.OpTxn(nil, ops, nil) }
	puts := func(prefix string, n int) []clientv3.Op {
		var ops []clientv3.Op
		for i := range n {
			ops = append(ops, put(fmt.Sprintf("%s/%d", prefix, i)))
		}
		return ops
	}
	wide := func(k, n int) []clientv3.Op {
		var ops []clientv3.Op
		for i := range k {
			ops = append(ops, nested(puts(fmt.Sprintf("/w%d-%d", n, i), n)...))
		}
		return ops
	}
	for _, tc := range []struct {
		name string
		ops  []clientv3.Op
		want error
	}{
		{"two siblings put one key", []clientv3.Op{nested(put("/k")), nested(put("/k"))}, rpctypes.ErrDuplicateKey},
		{"a sibling puts what an earlier one deletes", []clientv3.Op{nested(del("/k")), nested(put("/k"))}, rpctypes.ErrDuplicateKey},
		{"a sibling puts what an earlier one deletes by range", []clientv3.Op{nested(clientv3.OpDelete("/r/", clientv3.WithPrefix())), nested(put("/r/x"))}, rpctypes.ErrDuplicateKey},
		// Accepted, though they touch one key: the footprint keeps them
		// apart all the same, so a batch is what its members alone do.
		{"a sibling deletes what an earlier one puts", []clientv3.Op{nested(put("/k")), nested(del("/k"))}, nil},
		{"two siblings delete one key", []clientv3.Op{nested(del("/k")), nested(del("/k"))}, nil},
		{"a put in one's then and another's else", []clientv3.Op{clientv3.OpTxn(nil, []clientv3.Op{put("/k")}, nil), clientv3.OpTxn(nil, nil, []clientv3.Op{put("/k")})}, rpctypes.ErrDuplicateKey},
		// --max-txn-ops (128) adds along a path, not across siblings:
		// 28 nested of 100 puts (2,800 in all) cost 28 + 100.
		{"28 nested of 100 each", wide(28, 100), nil},
		{"29 nested of 100 each", wide(29, 100), rpctypes.ErrTooManyOps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cli.Txn(t.Context()).Then(tc.ops...).Commit()
			if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestFootprint(t *testing.T) {
	claim := Txn{
		If: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("/queue/j/1"), "=", 5)},
		Then: []clientv3.Op{clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("/slots/j/0"), "=", 0)},
			[]clientv3.Op{clientv3.OpPut("/slots/j/0", "r"), clientv3.OpPut("/queue/j/1", "running")},
			[]clientv3.Op{clientv3.OpGet("/slots/j/", clientv3.WithPrefix())},
		)},
	}
	f := footprintOf(claim.request())
	if f.cost != 1+2 {
		t.Fatalf("cost %d, want 3: one op at the top, two below", f.cost)
	}
	var set keyset
	set.add(&f)
	for _, tc := range []struct {
		name string
		txn  Txn
		want bool
	}{
		{"another slot of the job", Txn{
			If:   []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("/slots/j/1"), "=", 0)},
			Then: []clientv3.Op{clientv3.OpPut("/slots/j/1", "r")},
		}, false},
		{"the same slot", Txn{Then: []clientv3.Op{clientv3.OpPut("/slots/j/0", "r")}}, true},
		{"a compare of a key it writes", Txn{If: []clientv3.Cmp{clientv3.Compare(clientv3.Version("/queue/j/1"), ">", 0)}}, true},
		{"a write of a key it compares, only", Txn{Then: []clientv3.Op{clientv3.OpDelete("/queue/j/1")}}, true},
		{"a range delete over its slot", Txn{Then: []clientv3.Op{clientv3.OpDelete("/slots/", clientv3.WithPrefix())}}, true},
		{"a range compare over its slot", Txn{If: []clientv3.Cmp{clientv3.Compare(clientv3.Version("/slots/j/"), ">", 0).WithPrefix()}}, true},
		{"a get of its slots", Txn{Then: []clientv3.Op{clientv3.OpGet("/slots/", clientv3.WithPrefix())}}, false},
		{"a compare of what it only compares", Txn{If: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("/other"), "=", 0)}}, false},
	} {
		g := footprintOf(tc.txn.request())
		if got := set.conflicts(&g); got != tc.want {
			t.Errorf("%s: conflict %v, want %v", tc.name, got, tc.want)
		}
	}
}
