package leader

import (
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
)

// cursorBook is what this term knows of each job's cursor (cursors.go)
// and of its count of scheduled runs (max_runs, maxruns.go), under a lock
// of its own: the two are read together from etcd, and every write that
// moves them compares the cursor as known here.
type cursorBook struct {
	keys    keys.Layout
	mu      sync.Mutex
	cursors map[string]time.Time // as stored in etcd
	counts  map[string]int
}

func newCursorBook(layout keys.Layout) *cursorBook {
	return &cursorBook{keys: layout, cursors: map[string]time.Time{}, counts: map[string]int{}}
}

// get is the job's cursor as known (zero, false: not known).
func (c *cursorBook) get(job string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.cursors[job]
	return t, ok
}

// ahead lists the jobs whose cursor is after t: ticks materialized or
// assigned past it.
func (c *cursorBook) ahead(t time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var jobs []string
	for job, at := range c.cursors {
		if at.After(t) {
			jobs = append(jobs, job)
		}
	}
	return jobs
}

// is compares job's cursor with what the term knows of it.
func (c *cursorBook) is(job string, known time.Time, ok bool) clientv3.Cmp {
	return queue.CursorIs(c.keys.Cursor(job), known, ok)
}

// forward moves the job's cursor to at, if that is later.
func (c *cursorBook) forward(job string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.cursors[job]) {
		c.cursors[job] = at
	}
}

// set records the job's cursor as stored (ok false: none is).
func (c *cursorBook) set(job string, at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.cursors[job] = at
	} else {
		delete(c.cursors, job)
	}
}

// reset records the job's cursor as stored (ok false: none is) and, with
// it, the count read with it (count nil: none was).
func (c *cursorBook) reset(job string, at time.Time, ok bool, count []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if count != nil {
		c.setCountLocked(job, count)
	}
	if ok {
		c.cursors[job] = at
	} else {
		delete(c.cursors, job)
	}
}

// setCount records the job's count as read (nil: none was).
func (c *cursorBook) setCount(job string, count []byte) {
	if count == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setCountLocked(job, count)
}

// load records the cursors and counts among kvs, a read of jobs/.
func (c *cursorBook) load(kvs []*mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kv := range kvs {
		if job, ok := c.keys.CursorJob(string(kv.Key)); ok {
			if t, err := queue.DecodeCursor(kv.Value); err == nil {
				c.cursors[job] = t
			}
		}
		if job, ok := c.keys.ScheduledJob(string(kv.Key)); ok {
			c.setCountLocked(job, kv.Value)
		}
	}
}

// setCountLocked records a count read from etcd (c.mu held).
func (c *cursorBook) setCountLocked(job string, value []byte) {
	if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
		c.counts[job] = n
	}
}
