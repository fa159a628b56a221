package leader

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// putRecords writes n records of job, every other one a skip (with its
// unstarted marker).
func putRecords(t *testing.T, cli *clientv3.Client, l *leader, job string, n int) {
	t.Helper()
	for i := range n {
		rec := runs.Record{RunID: fmt.Sprintf("%s@%03d", job, i), Job: job, Outcome: runs.Succeeded}
		if i%2 == 1 {
			rec.Outcome = runs.Skipped
		}
		if _, err := cli.Txn(t.Context()).Then(queue.RecordOps(l.d.Keys, &rec)...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// keysUnder is how many keys are under prefix.
func keysUnder(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// A job removed from the config keeps its records for
// removed_history_ttl after the leader first finds it removed; then they
// go, with their unstarted markers and the removal marker. The jobs still
// configured, and jobs whose names share a prefix, keep theirs.
func TestRemovedJobHistoryIsKeptForTheTTLThenDeleted(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	cfg := jobstest.Config(jobstest.HTTPJob("keep", "@every 1s", "http://127.0.0.1:1/"),
		jobstest.HTTPJob("gone-too", "@every 1s", "http://127.0.0.1:1/"))
	cfg.Cluster.RemovedHistoryTTL = config.Duration(5 * time.Minute)
	l := newTestLeader(t, cli, "/removed/", cfg, clock)
	putRecords(t, cli, l, "keep", 4)
	putRecords(t, cli, l, "gone", 6)
	putRecords(t, cli, l, "gone-too", 3)

	next, err := l.removedRound(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(5 * time.Minute); !next.Equal(want) {
		t.Errorf("next look at %s, want the expiry %s", next, want)
	}
	resp, err := cli.Get(t.Context(), l.d.Keys.RemovedJob("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != start.Format(time.RFC3339Nano) {
		t.Fatalf("removal marker %v, want one saying %s", resp.Kvs, start.Format(time.RFC3339Nano))
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 1 {
		t.Errorf("%d removal markers, want 1 (only gone is removed)", n)
	}

	clock.Advance(5*time.Minute - time.Second)
	if _, err := l.removedRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("gone")); n != 6 {
		t.Fatalf("a second before the TTL: %d records of gone, want all 6", n)
	}

	clock.Advance(time.Second)
	if _, err := l.removedRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{l.d.Keys.JobRuns("gone"), l.d.Keys.Unstarted("gone"), l.d.Keys.Removed()} {
		if n := keysUnder(t, cli, prefix); n != 0 {
			t.Errorf("at the TTL: %d keys left under %s, want none", n, prefix)
		}
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("keep")); n != 4 {
		t.Errorf("keep: %d records, want 4", n)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("gone-too")); n != 3 {
		t.Errorf("gone-too: %d records, want 3", n)
	}
}

// A job put back in the config before its TTL keeps its history: the
// marker goes, and the time of the old removal no longer counts.
func TestRemovedJobPutBackKeepsItsHistory(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	cfg := jobstest.Config()
	cfg.Cluster.RemovedHistoryTTL = config.Duration(time.Hour)
	l := newTestLeader(t, cli, "/removed-back/", cfg, clock)
	putRecords(t, cli, l, "back", 5)
	if _, err := l.removedRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.RemovedJob("back")); n != 1 {
		t.Fatalf("%d removal markers for back, want 1", n)
	}

	j := jobstest.WithDefaults(jobstest.HTTPJob("back", "@every 1s", "http://127.0.0.1:1/"))
	l.mu.Lock()
	l.jobs["back"] = &j
	l.mu.Unlock()
	clock.Advance(30 * time.Minute)
	if _, err := l.removedRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 0 {
		t.Fatalf("the job is back: %d removal markers, want none", n)
	}
	clock.Advance(2 * time.Hour)
	if _, err := l.removedRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("back")); n != 5 {
		t.Errorf("past the old TTL: %d records of back, want all 5", n)
	}
}

// A deposed leader neither marks nor purges (SPEC rule 1).
func TestRemovedHistoryWritesAreFenced(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	clock := clockwork.NewFakeClock()
	l := newTestLeader(t, cli, "/removed-fence/", jobstest.Config(), clock)
	putRecords(t, cli, l, "gone", 2)
	if _, err := cli.Delete(t.Context(), l.term.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := l.removedRound(t.Context()); !errors.Is(err, errNotLeader) {
		t.Fatalf("round of a deposed leader: %v, want errNotLeader", err)
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 0 {
		t.Errorf("a deposed leader wrote %d removal markers", n)
	}
}
