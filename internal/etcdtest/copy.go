package etcdtest

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Copy is a test's copy of the keys under one prefix, kept from a read and
// then from watch events the way a mirror keeps one, so that a test can
// compare it with etcd. Wrong lists each event that came at or below the
// revision the copy already held: one applied twice or out of order. Its
// owner locks: Copy itself is not safe for concurrent use.
type Copy struct {
	State map[string]string
	Rev   int64 // the copy holds every change up to here
	Wrong []string
}

// Reset replaces the copy with kvs, read at rev.
func (c *Copy) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	c.State = make(map[string]string, len(kvs))
	for _, kv := range kvs {
		c.State[string(kv.Key)] = string(kv.Value)
	}
	c.Rev = rev
}

// Apply applies events in order.
func (c *Copy) Apply(events []*clientv3.Event) {
	if c.State == nil {
		c.State = map[string]string{}
	}
	for _, ev := range events {
		if ev.Kv.ModRevision <= c.Rev {
			c.Wrong = append(c.Wrong, fmt.Sprintf("event at revision %d on a copy at %d", ev.Kv.ModRevision, c.Rev))
		}
		if ev.Type == clientv3.EventTypeDelete {
			delete(c.State, string(ev.Kv.Key))
		} else {
			c.State[string(ev.Kv.Key)] = string(ev.Kv.Value)
		}
		c.Rev = ev.Kv.ModRevision
	}
}
