package leader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// One pruning round trims every job it is given to its newest
// history_limit records, many jobs and more than one transaction's worth
// of deletes at once, and leaves jobs under the limit alone.
func TestPruneJobsKeepsTheNewestRecordsOfEachJob(t *testing.T) {
	ctx := t.Context()
	counts := map[string]int{"p-small": 7, "p-mid": 30, "p-big": 150, "p-other": 40}
	var jobs []config.Job
	for name := range counts {
		j := jobstest.Job(name, "@every 1s")
		j.HistoryLimit = 10
		jobs = append(jobs, j)
	}
	l, cli, _ := leaderOn(t, "/prune/", jobstest.Config(jobs...), time.Time{})
	for name, n := range counts {
		for i := range n {
			if _, err := cli.Put(ctx, l.d.Keys.Record(name, fmt.Sprintf("%s@%03d", name, i)), "{}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.pruner.pruneJobs(ctx, []string{"p-small", "p-mid", "p-big"}); err != nil {
		t.Fatal(err)
	}
	for name, n := range counts {
		left := stored(t, cli, l.d.Keys.JobRuns(name))
		want := min(n, 10)
		if name == "p-other" {
			want = n // not in this round
		}
		if len(left) != want {
			t.Errorf("%s: %d records left, want %d", name, len(left), want)
			continue
		}
		for i, id := range left { // sorted by key: the newest, in order
			if w := fmt.Sprintf("%s@%03d", name, n-want+i); id != w {
				t.Errorf("%s: kept %s, want %s", name, id, w)
			}
		}
	}
}

// A record rewritten after the pruner read it (a retried run's final record
// at the key of its earlier attempt) is not deleted as old; the others are.
func TestPruneSparesARecordRewrittenSinceTheRead(t *testing.T) {
	ctx := t.Context()
	l, cli, _ := leaderOn(t, "/prune2/", jobstest.Config(jobstest.Job("p", "@every 1s")), time.Time{})
	var seen []seenKey
	for i := range 5 {
		key := l.d.Keys.Record("p", fmt.Sprintf("p@%d", i))
		put, err := cli.Put(ctx, key, `{"outcome":"lost"}`)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, seenKey{key: key, rev: put.Header.Revision})
	}
	rewritten := seen[2].key
	if _, err := cli.Put(ctx, rewritten, `{"outcome":"succeeded"}`); err != nil {
		t.Fatal(err)
	}
	if err := l.deleteUnchanged(ctx, seen); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, l.d.Keys.JobRuns("p"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != rewritten || string(resp.Kvs[0].Value) != `{"outcome":"succeeded"}` {
		t.Fatalf("left %d records (%v); want only the rewritten %s", len(resp.Kvs), resp.Kvs, rewritten)
	}
}

// history_limit counts runs that executed; skipped and missed records have
// their own skipped_history_limit, so a flood of skips cannot push real
// history out (docs/design-edges.md#operating-at-the-edges). The skips' markers go with their records.
func TestPruneKeepsSkipsApart(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("busy", "@every 1s")
	j.HistoryLimit, j.SkippedHistoryLimit = 5, 3
	l, cli, _ := leaderOn(t, "/prune-skips/", jobstest.Config(j), time.Time{})
	var executed, skipped []string
	for i := range 60 {
		id := fmt.Sprintf("busy@%03d", i)
		rec := runs.Record{RunID: id, Job: "busy", Outcome: runs.Succeeded}
		if i%6 != 0 { // five skips for each run that executed
			rec.Outcome = runs.Skipped
			skipped = append(skipped, id)
		} else {
			executed = append(executed, id)
		}
		if _, err := cli.Txn(ctx).Then(queue.RecordOps(l.d.Keys, &rec)...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.pruner.pruneJobs(ctx, []string{"busy"}); err != nil {
		t.Fatal(err)
	}
	left := stored(t, cli, l.d.Keys.JobRuns("busy"))
	want := append(append([]string(nil), executed[len(executed)-5:]...), skipped[len(skipped)-3:]...)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("records left %v, want the 5 newest executed and the 3 newest skipped: %v", left, want)
	}
	if n := keysUnder(t, cli, l.d.Keys.Unstarted("busy")); n != 3 {
		t.Errorf("%d unstarted markers left, want the 3 of the skips kept", n)
	}
}

// A run that executed and was lost, whose retry was then skipped, still
// counts against history_limit: its record never changes kind, so a
// prune's count of the runs that executed cannot drop between its read
// and its delete (the fault suite, 12-02: a lost record rewritten as a
// skipped retry, with a marker, after the pruner's read, left 9 of
// history_limit 10).
func TestPruneCountsARetrySkippedAfterItsRunAsExecuted(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("r", "@every 1s")
	j.HistoryLimit, j.SkippedHistoryLimit = 2, 1
	l, cli, _ := leaderOn(t, "/prune-retry/", jobstest.Config(j), time.Time{})
	write := func(id string, o runs.Outcome, previous ...runs.Attempt) {
		rec := runs.Record{RunID: id, Job: "r", Outcome: o, Previous: previous}
		if _, err := cli.Txn(ctx).Then(queue.RecordOps(l.d.Keys, &rec)...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	write("r@1", runs.Succeeded)
	write("r@2", runs.Succeeded)
	write("r@3", runs.Lost)
	write("r@3", runs.Skipped, runs.Attempt{Attempt: 1, Outcome: runs.Lost})
	write("r@4", runs.Skipped)
	write("r@5", runs.Skipped)
	if err := l.pruner.pruneJobs(ctx, []string{"r"}); err != nil {
		t.Fatal(err)
	}
	if left, want := stored(t, cli, l.d.Keys.JobRuns("r")), []string{"r@2", "r@3", "r@5"}; !slices.Equal(left, want) {
		t.Errorf("records left %v, want %v: the 2 newest that executed (the skipped retry one of them) and the newest skip", left, want)
	}
}

// A new term prunes nothing before it has taken the config: until then
// every job looks removed, and a removed job is trimmed to the default
// limits (a new leader cut a job with history_limit 100000 to 100 records).
// A job really removed is still trimmed to the defaults.
func TestPruneWaitsForTheTermsConfig(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("keep", "@every 1s")
	j.HistoryLimit, j.SkippedHistoryLimit = 1000, 1000
	l, cli, _ := leaderOn(t, "/prune4/", jobstest.Config(j), time.Time{})
	l.jobs = nil // the term has not looked at the config yet
	put := func(job string, n int) {
		for i := range n {
			if _, err := cli.Put(ctx, l.d.Keys.Record(job, fmt.Sprintf("%s@%03d", job, i)), "{}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(job string) int { return int(keysUnder(t, cli, l.d.Keys.JobRuns(job))) }
	put("keep", 150)
	l.d.Finished.Note("keep")
	if err := l.pruner.round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count("keep"); n != 150 {
		t.Fatalf("%d of keep's 150 records left after a round before the term took the config, want all (history_limit 1000)", n)
	}
	l.syncJobs()
	if err := l.pruner.round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count("keep"); n != 150 {
		t.Fatalf("%d of keep's 150 records left, want all (history_limit 1000)", n)
	}
	put("gone", 150)
	l.d.Finished.Note("gone")
	if err := l.pruner.round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count("gone"); n != config.DefaultHistoryLimit {
		t.Errorf("a removed job kept %d records, want the default %d", n, config.DefaultHistoryLimit)
	}
}
