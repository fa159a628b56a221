package assign

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// StartChunk writes the start mark of a chunk claimed ahead: its marker,
// as ClaimChunk wrote it at revision rev, rewritten without the ahead
// mark, if the marker is unchanged and the worker alive (its member key on
// its lease). Only then may the chunk's runs start: a worker resolved as dead
// had its markers read when it was dead already, and a dead incarnation
// never lives again, so the leader and the worker never both decide a
// run (docs/protocol.md, "Start marks"). It returns the marker's new
// ModRevision, which Cleanup compares. ErrGone: the marker changed or the
// worker is dead; no run of the chunk may start. jobs are the runs the
// chunk tried, as ClaimChunk was given them.
func (c *Claimer) StartChunk(ctx context.Context, a Assignment, chunk int, rev int64, jobs []string) (int64, error) {
	revs, errs := c.StartChunks(ctx, []Start{{Assignment: a, Chunk: chunk, Rev: rev, Jobs: jobs}})
	return revs[0], errs[0]
}

// Start is one chunk's start mark, StartChunk's arguments.
type Start struct {
	Assignment Assignment
	Chunk      int
	Rev        int64
	Jobs       []string
}

// MaxStarts bounds the marks of one StartChunks: each is one operation
// of its Then, under etcd's default --max-txn-ops (128).
const MaxStarts = 100

// StartChunks writes the start marks of several chunks due on one instant
// in one transaction, each on its own compares, with what StartChunk
// would return for each alone: a worker's chunks then start one round
// trip after their instant, where a transaction each queued in etcd
// behind the others (the last of 15 answered 15-20 ms after the first,
// docs/performance.md, "Bounds"). An error of the transaction is every
// mark's: none was written.
func (c *Claimer) StartChunks(ctx context.Context, starts []Start) ([]int64, []error) {
	revs, errs := make([]int64, len(starts)), make([]error, len(starts))
	if len(starts) > MaxStarts {
		for i := range starts {
			errs[i] = fmt.Errorf("assign: %d start marks in one transaction, at most %d", len(starts), MaxStarts)
		}
		return revs, errs
	}
	var marks []mark
	index := make([]int, 0, len(starts)) // marks[k] is starts[index[k]]'s
	for i, s := range starts {
		m, err := c.markOf(s)
		if err != nil {
			errs[i] = err
			continue
		}
		marks, index = append(marks, m), append(index, i)
	}
	if len(marks) == 0 {
		return revs, errs
	}
	rev, answers, err := c.commitMarks(ctx, marks)
	for k, i := range index {
		if err != nil {
			errs[i] = fmt.Errorf("assign: start %s: %w", marks[k].marker, err)
			continue
		}
		revs[i], errs[i] = c.started(marks[k], rev, answers[k])
	}
	return revs, errs
}

// mark is one start mark's transaction: marker rewritten as value (its
// runs named, not ahead) if worker lives.
type mark struct {
	marker, value, worker string
	cmps                  []clientv3.Cmp
	then, els             []clientv3.Op
}

// markOf is s's mark.
func (c *Claimer) markOf(s Start) (mark, error) {
	if err := s.Assignment.Validate(); err != nil {
		return mark{}, err
	}
	a := s.Assignment
	marker := c.keys.ClaimMarker(a.Worker, a.At, a.Group, s.Chunk)
	if s.Rev <= 0 || len(s.Jobs) == 0 {
		return mark{}, fmt.Errorf("assign: start %s: needs the marker's revision and its runs", marker)
	}
	value := encodeMarker(s.Jobs, false)
	return mark{
		marker: marker,
		value:  value,
		worker: a.Worker,
		cmps:   []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(marker), "=", s.Rev), c.living(a.Worker)},
		then:   []clientv3.Op{clientv3.OpPut(marker, value)},
		els:    []clientv3.Op{clientv3.OpGet(marker), clientv3.OpGet(c.memberKey(a.Worker), clientv3.WithKeysOnly())},
	}, nil
}

// commitMarks sends marks, one as a plain transaction, several each nested
// in one, and returns the commit's revision and each mark's answer.
func (c *Claimer) commitMarks(ctx context.Context, marks []mark) (int64, []*etcdserverpb.TxnResponse, error) {
	if len(marks) == 1 {
		m := marks[0]
		resp, err := c.kv.Txn(ctx).If(m.cmps...).Then(m.then...).Else(m.els...).Commit()
		if err != nil {
			return 0, nil, err
		}
		return resp.Header.Revision, []*etcdserverpb.TxnResponse{{Succeeded: resp.Succeeded, Responses: resp.Responses}}, nil
	}
	ops := make([]clientv3.Op, len(marks))
	for i, m := range marks {
		ops[i] = clientv3.OpTxn(m.cmps, m.then, m.els)
	}
	resp, err := c.kv.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, nil, err
	}
	answers := make([]*etcdserverpb.TxnResponse, len(marks))
	for i := range marks {
		answers[i] = resp.Responses[i].GetResponseTxn()
	}
	return resp.Header.Revision, answers, nil
}

// started is the outcome of m from its part of the transaction, committed
// at revision rev.
func (c *Claimer) started(m mark, rev int64, resp *etcdserverpb.TxnResponse) (int64, error) {
	if resp == nil {
		return 0, fmt.Errorf("assign: start %s: no answer for the mark in the transaction's response", m.marker)
	}
	if resp.Succeeded {
		return rev, nil
	}
	// A mark sent again after its answer was lost finds itself written:
	// only this worker rewrites its markers (the leader deletes them).
	mkv := resp.Responses[0].GetResponseRange().Kvs
	if len(mkv) > 0 && string(mkv[0].Value) == m.value && c.alive(m.worker, resp.Responses[1].GetResponseRange().Kvs) {
		return mkv[0].ModRevision, nil
	}
	return 0, fmt.Errorf("assign: start %s: the marker changed or its worker is taken for dead: %w", m.marker, ErrGone)
}
