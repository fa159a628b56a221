package jobs

import (
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// cancelView mirrors cancel/: requests to stop a running run, from the API
// or from a worker that replaces the run (overlap: replace). The worker
// holding the run cancels it when the request appears.
type cancelView struct {
	prefix string
	mu     sync.Mutex
	reqs   map[string]string // run id -> reason
	notify func(runID, reason string)
}

func newCancelView(prefix string, notify func(runID, reason string)) *cancelView {
	return &cancelView{prefix: prefix, reqs: map[string]string{}, notify: notify}
}

// Reset implements mirror.Handler.
func (c *cancelView) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	reqs := map[string]string{}
	for _, kv := range kvs {
		reqs[strings.TrimPrefix(string(kv.Key), c.prefix)] = string(kv.Value)
	}
	c.mu.Lock()
	c.reqs = reqs
	c.mu.Unlock()
	for id, reason := range reqs {
		c.notify(id, reason)
	}
}

// Apply implements mirror.Handler.
func (c *cancelView) Apply(events []*clientv3.Event, _ int64) {
	for _, ev := range events {
		id := strings.TrimPrefix(string(ev.Kv.Key), c.prefix)
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

// requested returns the reason a cancel of runID was asked for.
func (c *cancelView) requested(runID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.reqs[runID]
	return r, ok
}
