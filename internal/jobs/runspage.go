package jobs

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Page asks for part of a listing: at most Limit entries (0: all) after
// the cursor After (a job name, or a run id for run records).
type Page struct {
	Limit int
	After string
}

// runPages reads a job's run records, newest first, a page at a time.
type runPages struct {
	kv   clientv3.KV
	keys keys.Layout
}

// Runs returns the job's records, newest first: page.Limit of them,
// older than the run page.After when it is set. next is the cursor of the
// following page (the oldest run id returned), empty on the last. A job
// removed from the config is known while it has records (RemovedJobs).
func (rr *runReader) Runs(ctx context.Context, job string, page Page) (list []runs.Record, next string, err error) {
	list, next, err = rr.pages.readRuns(ctx, job, page)
	if err == nil && len(list) == 0 && page.After == "" && rr.config().Job(job) == nil {
		return nil, "", rr.unknownJob(ctx, job)
	}
	return list, next, err
}

// readRuns reads records without asking the current config: a listing made
// from one config must not fail because a reload removed a job meanwhile.
//
// Records come newest first: in the order they were last written (mod
// revision, descending), and among records written by one transaction
// (a group commit ends many runs at one revision) by key, descending. A
// page after run X holds what comes after X in that order, so paging with
// the cursor lists every record once even when a page ends inside such a
// group.
func (h runPages) readRuns(ctx context.Context, job string, page Page) ([]runs.Record, string, error) {
	prefix := h.keys.JobRuns(job)
	var out []*mvccpb.KeyValue
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend)}
	if page.After != "" {
		same, before, err := h.pageFrom(ctx, job, prefix, page.After)
		if err != nil {
			return nil, "", err
		}
		out = same
		opts = append(opts, clientv3.WithMaxModRev(before))
	}
	// One more than the page holds tells whether there is a next page;
	// the cursor's own revision may already have given that many.
	if want := page.Limit + 1 - len(out); want > 0 {
		older, err := h.olderRuns(ctx, job, prefix, want, opts)
		if err != nil {
			return nil, "", err
		}
		out = append(out, older...)
	}
	more := len(out) > page.Limit
	if more {
		out = out[:page.Limit]
	}
	list := make([]runs.Record, 0, len(out))
	for _, kv := range out {
		if r, err := runs.DecodeRecord(kv.Value); err == nil {
			list = append(list, r)
		}
	}
	next := ""
	if more && len(out) > 0 {
		next = h.keys.RecordRun(string(out[len(out)-1].Key))
	}
	return list, next, nil
}

// pageFrom reads where a page after run id after starts: the records
// written in after's revision that sort before it, and the revision the
// older ones end at.
func (h runPages) pageFrom(ctx context.Context, job, prefix, after string) ([]*mvccpb.KeyValue, int64, error) {
	at, err := h.kv.Get(ctx, h.keys.Record(job, after), clientv3.WithKeysOnly())
	if err != nil {
		return nil, 0, fmt.Errorf("jobs: read runs of %s: %w", job, err)
	}
	if len(at.Kvs) == 0 {
		return nil, 0, refuse(ErrUnknownRun, "job %q has no run %q to page from: start from a run id its list shows", job, after)
	}
	x := at.Kvs[0]
	same, err := h.writtenAt(ctx, prefix, x.ModRevision)
	if err != nil {
		return nil, 0, err
	}
	var out []*mvccpb.KeyValue
	for _, kv := range same {
		if bytes.Compare(kv.Key, x.Key) < 0 {
			out = append(out, kv)
		}
	}
	return out, x.ModRevision - 1, nil
}

// olderRuns reads up to want records, newest first, and the whole of the
// last revision the limit may have cut short.
func (h runPages) olderRuns(ctx context.Context, job, prefix string, want int, opts []clientv3.OpOption) ([]*mvccpb.KeyValue, error) {
	resp, err := h.kv.Get(ctx, prefix, append(opts, clientv3.WithLimit(int64(want)))...)
	if err != nil {
		return nil, fmt.Errorf("jobs: read runs of %s: %w", job, err)
	}
	older := resp.Kvs
	if n := len(older); n == want {
		last := older[n-1].ModRevision
		group, err := h.writtenAt(ctx, prefix, last)
		if err != nil {
			return nil, err
		}
		i := sort.Search(n, func(i int) bool { return older[i].ModRevision <= last })
		older = append(older[:i:i], group...)
	}
	sortNewestFirst(older)
	return older, nil
}

// writtenAt is every record under prefix last written at revision rev, by
// key, descending.
func (h runPages) writtenAt(ctx context.Context, prefix string, rev int64) ([]*mvccpb.KeyValue, error) {
	resp, err := h.kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithMinModRev(rev), clientv3.WithMaxModRev(rev))
	if err != nil {
		return nil, fmt.Errorf("jobs: read runs written at revision %d: %w", rev, err)
	}
	sortNewestFirst(resp.Kvs)
	return resp.Kvs, nil
}

// sortNewestFirst orders records by mod revision, then key, descending.
func sortNewestFirst(kvs []*mvccpb.KeyValue) {
	sort.SliceStable(kvs, func(i, j int) bool {
		if kvs[i].ModRevision != kvs[j].ModRevision {
			return kvs[i].ModRevision > kvs[j].ModRevision
		}
		return bytes.Compare(kvs[i].Key, kvs[j].Key) > 0
	})
}
