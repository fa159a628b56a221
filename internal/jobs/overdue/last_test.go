package overdue

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
)

// Last answers each job's later success of the two places it may be
// stored, for a few jobs (one read of their keys) and for many (the
// directory, then only what changed since, and all of it again once a
// full read is fullRead old, forgetting deleted keys), and while etcd does
// not answer, what All read last, with the error.
func TestLastAnswersTheLaterSuccessAndKeepsItsLastRead(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := etcdtest.NewClient(t, cluster.Endpoints())
	k := keys.New("/last/")
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	succeeded := func(job string, minute int) string {
		return Encode(Succeeded{RunID: fmt.Sprintf("%s-%d", job, minute), ScheduledAt: at.Add(time.Duration(minute) * time.Minute),
			EndedAt: at.Add(time.Duration(minute)*time.Minute + time.Second)})
	}
	commit := func(ops ...clientv3.Op) {
		t.Helper()
		if _, err := cli.Txn(t.Context()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	commit(
		clientv3.OpPut(k.LastSuccess("new"), succeeded("new", 5)),
		clientv3.OpPut(k.SucceededInJobs("old"), succeeded("old", 3)),
		clientv3.OpPut(k.LastSuccess("both"), succeeded("both", 7)),
		clientv3.OpPut(k.SucceededInJobs("both"), succeeded("both", 2)),
		clientv3.OpPut(k.LastSuccess("later-old"), succeeded("later-old", 1)),
		clientv3.OpPut(k.SucceededInJobs("later-old"), succeeded("later-old", 9)),
		clientv3.OpPut(k.LastSuccess("garbage"), "{"),
	)
	view := NewView(k)
	resp, err := cli.Get(t.Context(), k.Jobs(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	view.Reset(resp.Kvs, resp.Header.Revision)
	clock := clockwork.NewFakeClock()
	last, err := NewLast(cli, k, view, clock)
	if err != nil {
		t.Fatal(err)
	}
	show := func(answer Successes) string {
		var out []string
		for _, job := range []string{"added", "both", "garbage", "later-old", "missing", "new", "old"} {
			if s := answer(job); s != nil {
				out = append(out, job+"="+s.RunID)
			}
		}
		return strings.Join(out, " ")
	}
	want := "both=both-7 later-old=later-old-9 new=new-5 old=old-3"
	few, err := last.Of(t.Context(), "both", "garbage", "later-old", "missing", "new", "old")
	if err != nil || show(few) != want {
		t.Errorf("Of six jobs = %s, %v; want %s", show(few), err, want)
	}
	many := make([]string, maxGets+1)
	for i := range many {
		many[i] = fmt.Sprint("job", i)
	}
	if all, err := last.Of(t.Context(), many...); err != nil || show(all) != want {
		t.Errorf("Of %d jobs = %s, %v; want the directory's %s", len(many), show(all), err, want)
	}
	// Read again: what changed since, kept with what was read before.
	commit(clientv3.OpPut(k.LastSuccess("new"), succeeded("new", 6)), clientv3.OpPut(k.LastSuccess("added"), succeeded("added", 1)),
		clientv3.OpDelete(k.LastSuccess("both")))
	want = "added=added-1 both=both-7 later-old=later-old-9 new=new-6 old=old-3"
	if all, err := last.All(t.Context()); err != nil || show(all) != want {
		t.Errorf("All after changes = %s, %v; want %s (the deleted key known until a full read)", show(all), err, want)
	}
	clock.Advance(fullRead)
	want = "added=added-1 both=both-2 later-old=later-old-9 new=new-6 old=old-3"
	if all, err := last.All(t.Context()); err != nil || show(all) != want {
		t.Errorf("All %s later = %s, %v; want %s (the deleted key forgotten)", fullRead, show(all), err, want)
	}
	// More keys changed than are read one by one: the directory's values
	// changed since, at the revision their names were read.
	var bulk []clientv3.Op
	for i := range maxChanged + 1 {
		job := fmt.Sprintf("bulk-%04d", i)
		bulk = append(bulk, clientv3.OpPut(k.LastSuccess(job), succeeded(job, 1)))
	}
	for part := range slices.Chunk(bulk, 100) {
		commit(part...)
	}
	all, err := last.All(t.Context())
	if first, end := all("bulk-0000"), all(fmt.Sprintf("bulk-%04d", maxChanged)); err != nil || first == nil || end == nil || show(all) != want {
		t.Errorf("All after %d changes = %s, %v, first %v, last %v; want %s and both", maxChanged+1, show(all), err, first, end, want)
	}
	_ = cli.Close()
	stale, err := last.All(t.Context())
	if err == nil || show(stale) != want {
		t.Errorf("All without etcd = %s, %v; want the last read %s and an error", show(stale), err, want)
	}
	if _, err := last.Of(t.Context(), "new"); err == nil {
		t.Error("Of without etcd answered no error")
	}
	if _, err := NewLast(nil, k, view, clock); err == nil {
		t.Error("NewLast took no client")
	}
	if _, err := NewLast(cli, k, view, nil); err == nil {
		t.Error("NewLast took no clock")
	}
}

// What a scrape's read of the last successes costs with every job of a
// large cluster succeeded once: go test ./internal/jobs/overdue -run -
// -bench LastAll -benchmem (docs/performance.md, "Scale").
func BenchmarkLastAll(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(n, "jobs"), func(b *testing.B) {
			cluster := etcdtest.Start(b)
			cli := etcdtest.NewClient(b, cluster.Endpoints())
			k := keys.New("/bench/")
			at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
			for from := 0; from < n; from += 100 {
				ops := make([]clientv3.Op, 0, 100)
				for i := from; i < min(from+100, n); i++ {
					job := fmt.Sprintf("job-%06d", i)
					ops = append(ops, clientv3.OpPut(k.LastSuccess(job), Encode(Succeeded{RunID: job + "@" + at.Format(time.RFC3339Nano), ScheduledAt: at, EndedAt: at.Add(time.Second)})))
				}
				if _, err := cli.Txn(b.Context()).Then(ops...).Commit(); err != nil {
					b.Fatal(err)
				}
			}
			last, err := NewLast(cli, k, NewView(k), clockwork.NewRealClock())
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if all, err := last.All(b.Context()); err != nil || all("job-000000") == nil {
					b.Fatalf("All: %v, job-000000 unknown", err)
				}
			}
		})
	}
}
