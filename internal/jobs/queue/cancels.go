package queue

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Cancels mirrors cancel/: requests to stop a running run, from the API
// or from a worker that replaces the run (overlap: replace). The worker
// holding the run cancels it when the request appears.
type Cancels struct {
	keys   keys.Layout
	mu     sync.Mutex
	reqs   map[string]string // run id -> reason
	notify func(runID, reason string)
}

// NewCancels calls notify with each request that appears.
func NewCancels(layout keys.Layout, notify func(runID, reason string)) *Cancels {
	return &Cancels{keys: layout, reqs: map[string]string{}, notify: notify}
}

// Reset implements mirror.Handler.
func (c *Cancels) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	reqs := map[string]string{}
	for _, kv := range kvs {
		reqs[c.keys.CancelRun(string(kv.Key))] = string(kv.Value)
	}
	c.mu.Lock()
	c.reqs = reqs
	c.mu.Unlock()
	for id, reason := range reqs {
		c.notify(id, reason)
	}
}

// Apply implements mirror.Handler.
func (c *Cancels) Apply(events []*clientv3.Event, _ int64) {
	for _, ev := range events {
		id := c.keys.CancelRun(string(ev.Kv.Key))
		c.mu.Lock()
		if ev.Type == clientv3.EventTypeDelete {
			delete(c.reqs, id)
			c.mu.Unlock()
			continue
		}
		c.reqs[id] = string(ev.Kv.Value)
		c.mu.Unlock()
		c.notify(id, string(ev.Kv.Value))
	}
}

// Requested returns the reason a cancel of runID was asked for.
func (c *Cancels) Requested(runID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.reqs[runID]
	return r, ok
}
