package leader

import (
	"bytes"
	"context"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A job's records to prune, deleted as key ranges
// (docs/design-leader.md#history). In a steady state
// every run that ends makes one record too many, so a key a run was
// deleted, each with a compare that it was unchanged since the read (a
// retried run's final record replaces its earlier attempt's at the same
// key): two of etcd's index operations a run, 9.6-9.8 a run at 1,000 jobs
// instead of 7.9-8.1 (test/bench's burst, histories full). The records of
// a job's ticks sort by due time, so the oldest beyond its limit are
// mostly consecutive keys: each run of consecutive keys to delete (a span)
// goes with one compare over its range (every key in it unchanged since
// the read: none rewritten, none written since) and one DeleteRange (and
// one for the unstarted markers of its skipped and missed records). A span
// whose compare fails is deleted key by key (deleteUnchanged), as before.

// maxSpanKeys bounds a span's records and markers: its compare reads
// every key in its range (values too), and a span whose compare fails goes
// to deleteUnchanged in one transaction of a compare a key and the fence,
// under etcd's --max-txn-ops of 128. A removed job's or a lowered limit's
// first round can delete thousands of consecutive records.
const maxSpanKeys = 96

// span is a run of a job's records consecutive in key order, every one
// of them to be deleted, as read, with at most maxSpanKeys records and
// markers.
type span struct {
	first, last string    // record keys
	marks       [2]string // the first and last unstarted marker's keys; "" when it has none
	maxRev      int64     // the newest ModRevision among its keys as read
	seen        []seenKey // its records and markers, for deleteUnchanged
}

// spanOps are the compare and the deletes of s.
func (s *span) ops() (clientv3.Cmp, []clientv3.Op) {
	cmp := clientv3.Compare(clientv3.ModRevision(s.first).WithRange(s.last+"\x00"), "<", s.maxRev+1)
	ops := []clientv3.Op{clientv3.OpDelete(s.first, clientv3.WithRange(s.last+"\x00"))}
	if s.marks[0] != "" {
		ops = append(ops, clientv3.OpDelete(s.marks[0], clientv3.WithRange(s.marks[1]+"\x00")))
	}
	return cmp, ops
}

// spansOf groups old, the records of a job to delete (by key, with their
// unstarted markers if any, as read), into spans: records is every record
// of the job as read, in any order. A span never holds a record to keep.
func spansOf(records []*mvccpb.KeyValue, old map[string]oldRecord) []span {
	sorted := slices.Clone(records)
	slices.SortFunc(sorted, func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	var out []span
	var cur *span
	for _, kv := range sorted {
		o, ok := old[string(kv.Key)]
		if !ok {
			cur = nil // a record kept ends the span
			continue
		}
		if cur == nil || len(cur.seen) > maxSpanKeys-2 { // room for a record and its marker
			out = append(out, span{first: string(kv.Key)})
			cur = &out[len(out)-1]
		}
		cur.last = string(kv.Key)
		cur.maxRev = max(cur.maxRev, kv.ModRevision)
		cur.seen = append(cur.seen, seenKey{key: string(kv.Key), rev: kv.ModRevision})
		if o.mark != nil {
			mk := string(o.mark.Key)
			if cur.marks[0] == "" {
				cur.marks[0] = mk
			}
			cur.marks[1] = mk
			cur.seen = append(cur.seen, seenKey{key: mk, rev: o.mark.ModRevision})
		}
	}
	return out
}

// oldRecord is a record to delete and its unstarted marker (nil: none).
type oldRecord struct{ mark *mvccpb.KeyValue }

// deleteSpans deletes spans in one fenced transaction; when a compare
// failed, each span alone, and a span that fails alone key by key.
func (b *base) deleteSpans(ctx context.Context, spans []span) error {
	try := func(spans []span) (bool, error) {
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for i := range spans {
			c, o := spans[i].ops()
			cmps, ops = append(cmps, c), append(ops, o...)
		}
		return b.fenced(ctx, cmps, ops...)
	}
	ok, err := try(spans)
	if ok || err != nil {
		return err
	}
	if len(spans) == 1 {
		return b.deleteUnchanged(ctx, spans[0].seen)
	}
	for i := range spans {
		ok, err := try(spans[i : i+1])
		if err == nil && !ok {
			err = b.deleteUnchanged(ctx, spans[i].seen)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
