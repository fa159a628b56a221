package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Records written by one transaction share a revision: a group commit
// ends many runs at once. Paging lists each record once, in the order one
// page gives, for every page size, also when a page ends inside such a
// group (before, the cursor skipped the rest of its group).
func TestPagingThroughRecordsOfOneCommit(t *testing.T) {
	etcd := startEtcd(t)
	n := etcd.node("a", newConfig(idleJob("page", "0 0 1 1 *")))
	layout := keys.New(testPrefix)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(from, count int) {
		var ops []clientv3.Op
		for i := from; i < from+count; i++ {
			at := base.Add(time.Duration(i) * time.Minute)
			rec := runs.Record{Job: "page", RunID: runs.ID("page", at), ScheduledAt: at, Outcome: runs.Succeeded, Trigger: runs.Schedule}
			ops = append(ops, clientv3.OpPut(layout.Record("page", rec.RunID), runs.EncodeRecord(&rec)))
		}
		if _, err := etcd.Client().Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// Groups of 1, 5, 1, 4 and 2 records, 13 in all.
	put(0, 1)
	put(1, 5)
	put(6, 1)
	put(7, 4)
	put(11, 2)
	const total = 13

	all, next, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 100})
	if err != nil || next != "" || len(all) != total {
		t.Fatalf("one page of 100: %d runs, next %q, err %v", len(all), next, err)
	}
	var want []string
	for _, r := range all {
		want = append(want, r.RunID)
	}
	for limit := 1; limit <= total; limit++ {
		if got := pageAll(t, n, "page", limit, total); !slices.Equal(got, want) {
			t.Errorf("pages of %d gave\n%v\none page gave\n%v", limit, got, want)
		}
	}
	// Newest first: the last group written comes first.
	if want[0] != runs.ID("page", base.Add(12*time.Minute)) && want[0] != runs.ID("page", base.Add(11*time.Minute)) {
		t.Errorf("first listed %s, want one of the last group written", want[0])
	}
}

// pageAll lists job's runs a page of limit at a time, following the
// cursor, and fails t if paging does not end after total runs' pages.
func pageAll(t *testing.T, n *node, job string, limit, total int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		list, next, err := n.engine.Runs(t.Context(), job, jobs.Page{Limit: limit, After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > limit {
			t.Fatalf("limit %d: a page of %d", limit, len(list))
		}
		for _, r := range list {
			got = append(got, r.RunID)
		}
		if next == "" {
			return got
		}
		if pages > total {
			t.Fatalf("limit %d: paging does not end", limit)
		}
		cursor = next
	}
}

// A job's history lists its ticks in chunk records (shed/, the ticks of an
// instant a worker shed together: docs/design-shed.md) among its own
// records, by the revision each was written at, then run id: paging lists
// each once, for every page size, also when a page ends inside a revision
// that wrote both kinds or several chunk records; a cursor may be a tick
// of a chunk record. A chunk record deleted leaves the history.
func TestAJobsHistoryMergesItsTicksInChunkRecords(t *testing.T) {
	etcd := startEtcd(t)
	n := etcd.node("a", newConfig(idleJob("page", "0 0 1 1 *")))
	layout := keys.New(testPrefix)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	own := func(i int) clientv3.Op {
		rec := runs.Record{Job: "page", RunID: runs.ID("page", at(i)), ScheduledAt: at(i), Outcome: runs.Succeeded, Trigger: runs.Schedule}
		return clientv3.OpPut(layout.Record("page", rec.RunID), runs.EncodeRecord(&rec))
	}
	chunk := func(i int) clientv3.Op {
		c := runs.ChunkRecord{At: at(i), EndedAt: at(i).Add(2 * time.Second), Runs: []runs.ShedRun{
			{Job: "other", Outcome: runs.Missed}, {Job: "page", Outcome: runs.Missed, Error: "not started: 2s late"},
		}}
		return clientv3.OpPut(layout.ShedRecord(at(i), "w.1", "g", 0), runs.EncodeChunkRecord(&c))
	}
	for _, ops := range [][]clientv3.Op{
		{own(0)}, {chunk(1), chunk(2), chunk(3)}, {own(4), own(5)}, {chunk(6)}, {own(7), own(8), chunk(9)},
	} {
		if _, err := etcd.Client().Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	const total = 10
	var want []string
	for i := total - 1; i >= 0; i-- { // each revision's runs are later ticks than the last's
		want = append(want, runs.ID("page", at(i)))
	}
	poll.For(t, 20*time.Second, "the chunk records' ticks in page's history", func() bool {
		return slices.Equal(pageAll(t, n, "page", 100, total), want)
	})
	for limit := 1; limit <= total; limit++ {
		if got := pageAll(t, n, "page", limit, total); !slices.Equal(got, want) {
			t.Errorf("pages of %d gave\n%v\nwant\n%v", limit, got, want)
		}
	}
	list, _, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 1, After: runs.ID("page", at(9))})
	if err != nil || len(list) != 1 || list[0].Outcome != runs.Succeeded || list[0].RunID != runs.ID("page", at(8)) {
		t.Errorf("the page after the chunk record's tick at 9: %+v, %v", list, err)
	}
	list, _, err = n.engine.Runs(t.Context(), "page", jobs.Page{Limit: 1, After: runs.ID("page", at(7))})
	if err != nil || len(list) != 1 || list[0].Outcome != runs.Missed || list[0].Slot != runs.NoSlot || list[0].Error != "not started: 2s late" {
		t.Errorf("the chunk record's tick at 6, after 7: %+v, %v; want it missed as its chunk record says", list, err)
	}
	if _, err := etcd.Client().Delete(t.Context(), layout.ShedRecord(at(6), "w.1", "g", 0)); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(id string) bool { return id == runs.ID("page", at(6)) })
	poll.For(t, 20*time.Second, "the deleted chunk record's tick out of page's history", func() bool {
		return slices.Equal(pageAll(t, n, "page", 3, total), want)
	})
}
