package mirror

import (
	"bytes"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Only hands h the keys under prefix of a wider prefix's reads and watch
// responses: a narrower view served by a watch another view keeps anyway
// (behind Tee), so each of its events crosses the wire once, not twice. A
// response with none of h's keys is not passed on (a progress notification
// has nothing for h either).
func Only(prefix string, h Handler) Handler { return only{prefix: []byte(prefix), h: h} }

type only struct {
	prefix []byte
	h      Handler
}

func (o only) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	var mine []*mvccpb.KeyValue
	for _, kv := range kvs {
		if bytes.HasPrefix(kv.Key, o.prefix) {
			mine = append(mine, kv)
		}
	}
	o.h.Reset(mine, rev)
}

func (o only) Apply(events []*clientv3.Event, rev int64) {
	var mine []*clientv3.Event
	for _, ev := range events {
		if bytes.HasPrefix(ev.Kv.Key, o.prefix) {
			mine = append(mine, ev)
		}
	}
	if len(mine) > 0 {
		o.h.Apply(mine, rev)
	}
}
