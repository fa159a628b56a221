package jobs

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Page asks for part of a listing: at most Limit entries (0: all) after
// the cursor After (a job name, or a run id for run records).
type Page struct {
	Limit int
	After string
}

// runPages reads a job's run records, newest first, a page at a time: its
// records of their own, merged with its ticks in chunk records (shed, a
// replica's index of them; nil: none).
type runPages struct {
	kv   clientv3.KV
	keys keys.Layout
	shed *shed.Index
}

// listed is one run of a job's history: a record of its own (kv), or a
// tick of a chunk record (tick), at the chunk record's revision.
type listed struct {
	rev  int64
	id   string
	kv   *mvccpb.KeyValue
	tick runs.Record
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
// (a group commit ends many runs at one revision; a chunk record holds
// many ticks) by run id, descending. A page after run X holds what comes
// after X in that order, so paging with the cursor lists every record
// once even when a page ends inside such a group.
func (h runPages) readRuns(ctx context.Context, job string, page Page) ([]runs.Record, string, error) {
	prefix := h.keys.JobRuns(job)
	ticks := h.ticks(job)
	var out []listed
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend)}
	if page.After != "" {
		same, before, err := h.pageFrom(ctx, job, prefix, page.After, ticks)
		if err != nil {
			return nil, "", err
		}
		out = same
		opts = append(opts, clientv3.WithMaxModRev(before))
		ticks = ticks[sort.Search(len(ticks), func(i int) bool { return ticks[i].rev <= before }):]
	}
	// One more than the page holds tells whether there is a next page;
	// the cursor's own revision may already have given that many. The
	// ticks older than the records read are older than those left unread.
	if want := page.Limit + 1 - len(out); want > 0 {
		older, err := h.olderRuns(ctx, job, prefix, want, opts)
		if err != nil {
			return nil, "", err
		}
		out = append(out, sortNewestFirst(append(older, ticks...))...)
	}
	more := len(out) > page.Limit
	if more {
		out = out[:page.Limit]
	}
	list := make([]runs.Record, 0, len(out))
	for _, l := range out {
		if l.kv == nil {
			list = append(list, l.tick)
		} else if r, err := runs.DecodeRecord(l.kv.Value); err == nil {
			list = append(list, r)
		}
	}
	next := ""
	if more && len(out) > 0 {
		next = out[len(out)-1].id
	}
	return list, next, nil
}

// ticks are job's ticks in chunk records, newest first.
func (h runPages) ticks(job string) []listed {
	if h.shed == nil {
		return nil
	}
	var out []listed
	for _, t := range h.shed.Job(job) {
		out = append(out, listed{rev: t.Created, id: t.Record.RunID, tick: t.Record})
	}
	return sortNewestFirst(out)
}

// pageFrom reads where a page after run id after starts: the records and
// ticks written in after's revision that sort before it, and the revision
// the older ones end at.
func (h runPages) pageFrom(ctx context.Context, job, prefix, after string, ticks []listed) ([]listed, int64, error) {
	at, err := h.kv.Get(ctx, h.keys.Record(job, after), clientv3.WithKeysOnly())
	if err != nil {
		return nil, 0, fmt.Errorf("jobs: read runs of %s: %w", job, err)
	}
	var rev int64
	if len(at.Kvs) > 0 {
		rev = at.Kvs[0].ModRevision
	} else if i := slices.IndexFunc(ticks, func(t listed) bool { return t.id == after }); i >= 0 {
		rev = ticks[i].rev
	} else {
		return nil, 0, refuse(ErrUnknownRun, "job %q has no run %q to page from: start from a run id its list shows", job, after)
	}
	same, err := h.writtenAt(ctx, prefix, rev)
	if err != nil {
		return nil, 0, err
	}
	for _, t := range ticks {
		if t.rev == rev {
			same = append(same, t)
		}
	}
	var out []listed
	for _, l := range sortNewestFirst(same) {
		if l.id < after {
			out = append(out, l)
		}
	}
	return out, rev - 1, nil
}

// olderRuns reads up to want records, newest first, and the whole of the
// last revision the limit may have cut short.
func (h runPages) olderRuns(ctx context.Context, job, prefix string, want int, opts []clientv3.OpOption) ([]listed, error) {
	resp, err := h.kv.Get(ctx, prefix, append(opts, clientv3.WithLimit(int64(want)))...)
	if err != nil {
		return nil, fmt.Errorf("jobs: read runs of %s: %w", job, err)
	}
	older := h.listed(resp.Kvs)
	if n := len(older); n == want {
		last := older[n-1].rev
		group, err := h.writtenAt(ctx, prefix, last)
		if err != nil {
			return nil, err
		}
		i := sort.Search(n, func(i int) bool { return older[i].rev <= last })
		older = append(older[:i:i], group...)
	}
	return sortNewestFirst(older), nil
}

// writtenAt is every record under prefix last written at revision rev.
func (h runPages) writtenAt(ctx context.Context, prefix string, rev int64) ([]listed, error) {
	resp, err := h.kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithMinModRev(rev), clientv3.WithMaxModRev(rev))
	if err != nil {
		return nil, fmt.Errorf("jobs: read runs written at revision %d: %w", rev, err)
	}
	return h.listed(resp.Kvs), nil
}

func (h runPages) listed(kvs []*mvccpb.KeyValue) []listed {
	out := make([]listed, len(kvs))
	for i, kv := range kvs {
		out[i] = listed{rev: kv.ModRevision, id: h.keys.RecordRun(string(kv.Key)), kv: kv}
	}
	return out
}

// sortNewestFirst orders runs by mod revision, then run id, descending,
// and returns them.
func sortNewestFirst(l []listed) []listed {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].rev != l[j].rev {
			return l[i].rev > l[j].rev
		}
		return l[i].id > l[j].id
	})
	return l
}
