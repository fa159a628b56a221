package txnbatch

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// A member travels as etcd's request, pb.TxnRequest: a caller that builds
// its own hands it over as is (Txn.Request: the lean path's claim, which
// avoids clientv3's clones of each compare), and one that uses clientv3's
// Cmp and Op has it built by clientv3 itself (request). A batch is then one
// request whose Then nests the members', sent on the client's connection
// with the call options the client's own KV uses (callOptions).

// capture is a pb.KVClient that keeps the transaction clientv3 would send
// and the call options it would send it with, and sends nothing.
type capture struct {
	pb.KVClient // nil: only Txn is called
	req         *pb.TxnRequest
	opts        []grpc.CallOption
}

func (c *capture) Txn(_ context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	c.req, c.opts = req, opts
	return &pb.TxnResponse{}, nil
}

// request is t as etcd's request: t.Request, or the one clientv3 builds
// from If and Then.
func (t Txn) request() *pb.TxnRequest {
	if t.Request != nil {
		return t.Request
	}
	var c capture
	_, _ = clientv3.NewKVFromKVClient(&c, nil).Txn(context.Background()).If(t.If...).Then(t.Then...).Commit()
	return c.req
}

// callOptions are the options client's own KV sends a transaction with:
// waiting for the connection to be ready, the message size limits.
func callOptions(client *clientv3.Client) []grpc.CallOption {
	var c capture
	_, _ = clientv3.NewKVFromKVClient(&c, client).Txn(context.Background()).Commit()
	return c.opts
}

// send sends req as clientv3's Txn.Commit does, its errors as clientv3
// returns them.
func (c *Committer) send(ctx context.Context, req *pb.TxnRequest) (*clientv3.TxnResponse, error) {
	resp, err := c.kv.Txn(ctx, req, c.callOpts...)
	if err != nil {
		return nil, clientv3.ContextError(ctx, err)
	}
	return (*clientv3.TxnResponse)(resp), nil
}

// nest is the batch's request: the members' requests nested in its Then,
// no compare of its own.
func nest(batch []*call) *pb.TxnRequest {
	then := make([]*pb.RequestOp, len(batch))
	for i, cl := range batch {
		then[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: cl.req}}
	}
	return &pb.TxnRequest{Success: then}
}
