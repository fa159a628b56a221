package overdue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Last reads jobs' last successes when they are asked for (the API's job,
// the gauges, an overdue notification). A succeeded run puts its job's
// under succeeded/ (keys.LastSuccess), which no replica watches: under
// jobs/, every replica decoded an event a run for a value read at a scrape
// or a request (docs/protocol.md#keys). Replicas before protocol 3 put it
// under jobs/, which View mirrors; Last answers the later of the two.
type Last struct {
	kv   clientv3.KV
	keys keys.Layout
	view *View

	mu sync.Mutex
	// good is All's last answer from etcd, what the gauges show while
	// etcd does not answer.
	good map[string]*Succeeded
}

// maxGets is the most jobs Of reads key by key, in one transaction (etcd's
// --max-txn-ops is 128 by default); for more it reads the directory.
const maxGets = 64

// NewLast reads through kv the keys of layout k, beside view's.
func NewLast(kv clientv3.KV, k keys.Layout, view *View) (*Last, error) {
	if kv == nil || view == nil || k.Prefix == "" {
		return nil, errors.New("overdue: NewLast needs an etcd client, the key layout and the view of jobs/")
	}
	k.SuccessInJobs = false // read where protocol 3 writes; View has the other
	return &Last{kv: kv, keys: k, view: view}, nil
}

// Of is the last success of each of jobs that has one, read at one
// revision (for more than maxGets jobs, All's answer).
func (l *Last) Of(ctx context.Context, jobs ...string) (map[string]*Succeeded, error) {
	if len(jobs) > maxGets {
		return l.All(ctx)
	}
	ops := make([]clientv3.Op, len(jobs))
	for i, job := range jobs {
		ops[i] = clientv3.OpGet(l.keys.LastSuccess(job))
	}
	resp, err := l.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("read the last successes of %d jobs: %w", len(jobs), err)
	}
	out := make(map[string]*Succeeded, len(jobs))
	for _, r := range resp.Responses {
		l.decode(out, r.GetResponseRange().GetKvs())
	}
	for _, job := range jobs {
		l.withView(out, job)
	}
	return out, nil
}

// All is every job's last success, read at one revision. When etcd does
// not answer, it returns its last answer, with the error.
func (l *Last) All(ctx context.Context) (map[string]*Succeeded, error) {
	resp, err := l.kv.Get(ctx, l.keys.LastSuccesses(), clientv3.WithPrefix())
	l.mu.Lock()
	if err == nil {
		l.good = make(map[string]*Succeeded, len(resp.Kvs))
		l.decode(l.good, resp.Kvs)
	}
	out := maps.Clone(l.good)
	l.mu.Unlock()
	if out == nil {
		out = map[string]*Succeeded{}
	}
	l.view.Range(func(key string, st stored) bool {
		// Not withView: Range holds the view's lock, which Get takes.
		if job, ok := l.keys.SucceededJob(key); ok && st.succeeded != nil {
			if old, ok := Decode[Succeeded](st.succeeded); ok && Later(&old, out[job]) {
				out[job] = &old
			}
		}
		return true
	})
	if err != nil {
		return out, fmt.Errorf("read the last successes: %w", err)
	}
	return out, nil
}

// decode adds the last successes of kvs, keys under succeeded/, to out.
// A value that does not decode is left out (only a writer other than the
// scheduler's would store one).
func (l *Last) decode(out map[string]*Succeeded, kvs []*mvccpb.KeyValue) {
	for _, kv := range kvs {
		job, ok := l.keys.LastSuccessJob(string(kv.Key))
		if !ok {
			continue
		}
		if s, ok := Decode[Succeeded](kv.Value); ok {
			out[job] = &s
		}
	}
}

// withView keeps in out the later of job's two last successes: the one
// read and the one an older replica put under jobs/.
func (l *Last) withView(out map[string]*Succeeded, job string) {
	if old := l.view.LastSucceeded(job); old != nil && Later(old, out[job]) {
		out[job] = old
	}
}

// Later reports whether a succeeded later than b (b nil: none): a later
// tick, or the same tick's later end.
func Later(a, b *Succeeded) bool {
	if b == nil {
		return true
	}
	if !a.ScheduledAt.Equal(b.ScheduledAt) {
		return a.ScheduledAt.After(b.ScheduledAt)
	}
	return a.EndedAt.After(b.EndedAt)
}
