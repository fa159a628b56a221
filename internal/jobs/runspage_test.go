package jobs_test

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/keys"
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
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			list, next, err := n.engine.Runs(t.Context(), "page", jobs.Page{Limit: limit, After: cursor})
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
				break
			}
			if pages > total {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d gave\n%v\none page gave\n%v", limit, got, want)
		}
	}
	// Newest first: the last group written comes first.
	if want[0] != runs.ID("page", base.Add(12*time.Minute)) && want[0] != runs.ID("page", base.Add(11*time.Minute)) {
		t.Errorf("first listed %s, want one of the last group written", want[0])
	}
}
