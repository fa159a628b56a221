package mirror

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Tee is one Handler that hands every read and watch response of a prefix
// to each of hs in turn: several views of one prefix on one watch, so an
// event crosses the wire and is decoded once, not once a view (two watches
// of jobs/ cost every replica two events for each put there).
func Tee(hs ...Handler) Handler { return tee(hs) }

type tee []Handler

func (t tee) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	for _, h := range t {
		h.Reset(kvs, rev)
	}
}

func (t tee) Apply(events []*clientv3.Event, rev int64) {
	for _, h := range t {
		h.Apply(events, rev)
	}
}
