package overdue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
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
//
// All keeps what it read: each read after the first asks etcd only for
// the keys changed since (changed), so a scrape of a cluster of 100,000
// jobs decodes the successes of its last seconds, not 100,000. A
// key deleted (a removed job's history purged) stays known until the next
// full read, at most fullRead later.
type Last struct {
	kv    clientv3.KV
	keys  keys.Layout
	view  *View
	clock clockwork.Clock

	mu       sync.Mutex
	known    map[string]known // by job, every key under succeeded/ through rev
	rev      int64            // 0: never read
	fullRead time.Time        // when known was last read whole
}

// known is one job's last success as read, and its key's ModRevision.
type known struct {
	s   *Succeeded
	rev int64
}

// Successes answers job's last success; nil when none is known.
type Successes func(job string) *Succeeded

// maxGets is the most jobs Of reads key by key, in one transaction (etcd's
// --max-txn-ops is 128 by default); for more it reads the directory.
const maxGets = 64

// fullRead is how often All reads every key again, forgetting deleted ones.
const fullRead = 10 * time.Minute

// NewLast reads through kv the keys of layout k, beside view's; clock
// times its full reads.
func NewLast(kv clientv3.KV, k keys.Layout, view *View, clock clockwork.Clock) (*Last, error) {
	if kv == nil || view == nil || k.Prefix == "" || clock == nil {
		return nil, errors.New("overdue: NewLast needs an etcd client, the key layout, the view of jobs/ and a clock")
	}
	k.SuccessInJobs = false // read where protocol 3 writes; View has the other
	return &Last{kv: kv, keys: k, view: view, clock: clock, known: map[string]known{}}, nil
}

// Of answers the last successes of jobs, read at one revision (for more
// than maxGets jobs, All's).
func (l *Last) Of(ctx context.Context, jobs ...string) (Successes, error) {
	if len(jobs) > maxGets {
		return l.All(ctx)
	}
	names := make([]string, len(jobs))
	for i, job := range jobs {
		names[i] = l.keys.LastSuccess(job)
	}
	kvs, err := l.gets(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("read the last successes of %d jobs: %w", len(jobs), err)
	}
	read := make(map[string]known, len(jobs))
	l.decode(read, kvs)
	return l.answer(func(job string) known { return read[job] }), nil
}

// All answers every job's last success, as etcd holds it now. When etcd
// does not answer, it answers what it last read, with the error.
func (l *Last) All(ctx context.Context) (Successes, error) {
	err := l.refresh(ctx)
	if err != nil {
		err = fmt.Errorf("read the last successes: %w", err)
	}
	return l.answer(func(job string) known {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.known[job]
	}), err
}

// refresh reads into known the keys changed since the last read, or all
// of them when none was read yet or the last full read is fullRead old.
func (l *Last) refresh(ctx context.Context) error {
	l.mu.Lock()
	from, full := l.rev, l.rev == 0 || l.clock.Now().Sub(l.fullRead) >= fullRead
	l.mu.Unlock()
	var kvs []*mvccpb.KeyValue
	var rev int64
	var err error
	if full {
		kvs, rev, err = l.read(ctx, clientv3.WithPrefix())
	} else {
		kvs, rev, err = l.changed(ctx, from)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if full {
		if rev < l.rev {
			return nil // a later read applied meanwhile
		}
		l.known, l.fullRead = map[string]known{}, l.clock.Now()
	}
	l.decode(l.known, kvs)
	l.rev = max(l.rev, rev)
	return nil
}

// maxChanged is the most changed keys changed reads by key; for more it
// reads the directory's values, as a full read does.
const maxChanged = 16 * maxGets

// changed reads the keys under succeeded/ changed after revision from,
// with their values. It asks for their names first: etcd (3.7 on) answers
// a keys-only range from its index, where a range of values, even one its
// min_mod_revision filter then empties, reads every value from disk. The
// values of the few changed keys are then read at that range's revision.
func (l *Last) changed(ctx context.Context, from int64) ([]*mvccpb.KeyValue, int64, error) {
	names, err := l.kv.Get(ctx, l.keys.LastSuccesses(), clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMinModRev(from+1))
	if err != nil {
		return nil, 0, err
	}
	rev := names.Header.Revision
	if len(names.Kvs) > maxChanged {
		return l.read(ctx, clientv3.WithPrefix(), clientv3.WithMinModRev(from+1), clientv3.WithRev(rev))
	}
	keys := make([]string, len(names.Kvs))
	for i, kv := range names.Kvs {
		keys[i] = string(kv.Key)
	}
	kvs, err := l.gets(ctx, keys, clientv3.WithRev(rev))
	return kvs, rev, err
}

// gets reads keys with opts, maxGets to a transaction.
func (l *Last) gets(ctx context.Context, keys []string, opts ...clientv3.OpOption) ([]*mvccpb.KeyValue, error) {
	var kvs []*mvccpb.KeyValue
	for part := range slices.Chunk(keys, maxGets) {
		ops := make([]clientv3.Op, len(part))
		for i, k := range part {
			ops[i] = clientv3.OpGet(k, opts...)
		}
		resp, err := l.kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Responses {
			kvs = append(kvs, r.GetResponseRange().GetKvs()...)
		}
	}
	return kvs, nil
}

// read reads under succeeded/ with opts, and the revision read at.
func (l *Last) read(ctx context.Context, opts ...clientv3.OpOption) ([]*mvccpb.KeyValue, int64, error) {
	resp, err := l.kv.Get(ctx, l.keys.LastSuccesses(), opts...)
	if err != nil {
		return nil, 0, err
	}
	return resp.Kvs, resp.Header.Revision, nil
}

// decode adds to into the last successes of kvs, keys under succeeded/,
// where newer than what into has. A value that does not decode is left
// out (only a writer other than the scheduler's would store one).
func (l *Last) decode(into map[string]known, kvs []*mvccpb.KeyValue) {
	for _, kv := range kvs {
		job, ok := l.keys.LastSuccessJob(string(kv.Key))
		if !ok || into[job].rev >= kv.ModRevision {
			continue
		}
		if s, ok := Decode[Succeeded](kv.Value); ok {
			into[job] = known{s: &s, rev: kv.ModRevision}
		}
	}
}

// answer is the later of each job's success read (read) and the one an
// older replica put under jobs/ (the view's).
func (l *Last) answer(read func(job string) known) Successes {
	return func(job string) *Succeeded {
		s := read(job).s
		if old := l.view.LastSucceeded(job); old != nil && Later(old, s) {
			return old
		}
		return s
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
