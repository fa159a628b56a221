package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
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
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cfg := jobstest.Config(jobstest.Job("keep", "@every 1s"),
		jobstest.Job("gone-too", "@every 1s"))
	cfg.Cluster.RemovedHistoryTTL = config.Duration(5 * time.Minute)
	l, cli, clock := leaderOn(t, "/removed/", cfg, start)
	putRecords(t, cli, l, "keep", 4)
	putRecords(t, cli, l, "gone", 6)
	putRecords(t, cli, l, "gone-too", 3)
	// gone was sharded: its ticks' fan-in keys go with its history.
	if _, err := cli.Put(t.Context(), l.d.Keys.FanIn("gone", "gone@1"), "pending"); err != nil {
		t.Fatal(err)
	}

	next, err := l.removed.round(t.Context(), true)
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
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("gone")); n != 6 {
		t.Fatalf("a second before the TTL: %d records of gone, want all 6", n)
	}

	clock.Advance(time.Second)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{l.d.Keys.JobRuns("gone"), l.d.Keys.Unstarted("gone"), l.d.Keys.JobFanIns("gone"), l.d.Keys.Removed()} {
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
	cfg := jobstest.Config()
	cfg.Cluster.RemovedHistoryTTL = config.Duration(time.Hour)
	l, cli, clock := leaderOn(t, "/removed-back/", cfg, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	putRecords(t, cli, l, "back", 5)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.RemovedJob("back")); n != 1 {
		t.Fatalf("%d removal markers for back, want 1", n)
	}

	j := jobstest.WithDefaults(jobstest.Job("back", "@every 1s"))
	l.mu.Lock()
	l.jobs["back"] = &j
	l.mu.Unlock()
	clock.Advance(30 * time.Minute)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 0 {
		t.Fatalf("the job is back: %d removal markers, want none", n)
	}
	clock.Advance(2 * time.Hour)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("back")); n != 5 {
		t.Errorf("past the old TTL: %d records of back, want all 5", n)
	}
}

// A deposed leader neither marks nor purges (docs/design.md#the-safety-rules, rule 1).
func TestRemovedHistoryWritesAreFenced(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	clock := clockwork.NewFakeClock()
	l := newTestLeader(t, cli, "/removed-fence/", jobstest.Config(), clock)
	putRecords(t, cli, l, "gone", 2)
	if _, err := cli.Delete(t.Context(), l.term.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := l.removed.round(t.Context(), true); !errors.Is(err, errNotLeader) {
		t.Fatalf("round of a deposed leader: %v, want errNotLeader", err)
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 0 {
		t.Errorf("a deposed leader wrote %d removal markers", n)
	}
}

// Between two lists of every job, a round looks at the jobs that left the
// config or came back (syncJobs) and those that ended a run while out of
// it (noteRemoved, from the prune pass); a job nobody noted waits for the
// next list.
func TestRemovedJobsNotedBetweenScans(t *testing.T) {
	ctx := t.Context()
	a, b := jobstest.Job("a", "@every 1s"), jobstest.Job("b", "@every 1s")
	both, onlyB := jobstest.Config(a, b), jobstest.Config(b)
	cfg := both
	l, cli, _ := leaderOn(t, "/removed-noted/", both, time.Time{})
	l.d.Config = func() *config.Config { return cfg }
	for _, job := range []string{"a", "b", "late", "unnoted"} {
		putRecords(t, cli, l, job, 2)
	}
	marked := func(job string) bool { return keysUnder(t, cli, l.d.Keys.RemovedJob(job)) == 1 }
	round := func(full bool) {
		t.Helper()
		if _, err := l.removed.round(ctx, full); err != nil {
			t.Fatal(err)
		}
	}

	cfg = onlyB
	l.syncJobs()
	l.removed.noteRemoved("late", "b") // b is configured: not a candidate
	round(false)
	if !marked("a") || !marked("late") || marked("b") || marked("unnoted") {
		t.Errorf("after a noted round: marked a %v, late %v, b %v, unnoted %v; want a and late only",
			marked("a"), marked("late"), marked("b"), marked("unnoted"))
	}
	round(true)
	if !marked("unnoted") {
		t.Error("a full round left unnoted unmarked")
	}
	cfg = both
	l.syncJobs()
	round(false)
	if marked("a") {
		t.Error("a is back in the config and still marked removed")
	}
}

// The term's part: it marks at once, and purges when the TTL ends on the
// clock, without being asked again.
func TestKeepRemovedHistoryPurgesAtTheTTL(t *testing.T) {
	cfg := jobstest.Config()
	cfg.Cluster.RemovedHistoryTTL = config.Duration(90 * time.Minute) // between two hourly lists
	l, cli, clock := leaderOn(t, "/removed-loop/", cfg, time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	putRecords(t, cli, l, "gone", 3)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.removed.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keepRemovedHistory: %v", err)
		}
	}()
	poll.For(t, 30*time.Second, "gone marked removed", func() bool { return keysUnder(t, cli, l.d.Keys.Removed()) == 1 })
	for _, d := range []time.Duration{time.Hour, 30 * time.Minute} { // the hourly list, then the expiry
		if err := clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(d)
	}
	poll.For(t, 30*time.Second, "gone's history deleted at the TTL", func() bool {
		return keysUnder(t, cli, l.d.Keys.JobRuns("gone")) == 0 && keysUnder(t, cli, l.d.Keys.Removed()) == 0
	})
}

// A removed job whose history is only in chunk records (ticks it shed,
// docs/design-shed.md) is found removed, and at the TTL its ticks go out
// of them, more than one transaction holds, each covered in its pruned
// stretches: a chunk record naming a job still configured keeps that
// job's tick. Without the index among the candidates, gone was never
// marked; without the take-out, its chunk records stayed.
func TestRemovedJobsTicksInChunkRecordsGoAtTheTTL(t *testing.T) {
	cfg := jobstest.Config(jobstest.Job("keep", "@every 1s"))
	cfg.Cluster.RemovedHistoryTTL = config.Duration(time.Minute)
	l, cli, clock := leaderOn(t, "/removed-chunks/", cfg, coverT0)
	shared := putChunk(t, cli, l, 0, 0, "gone", "keep")
	for n := 1; n <= maxPurgeTicks+5; n++ {
		putChunk(t, cli, l, n, 0, "gone")
	}
	indexChunks(t, cli, l)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.RemovedJob("gone")); n != 1 {
		t.Fatalf("%d removal markers for gone, want 1: its history is in chunk records", n)
	}
	clock.Advance(time.Minute)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.Shed()); n != 1 {
		t.Errorf("%d chunk records left, want the one naming keep", n)
	}
	if got := chunkJobs(t, cli, shared); !slices.Equal(got, []string{"keep"}) {
		t.Errorf("the shared chunk record names %v, want keep's tick only", got)
	}
	if n := keysUnder(t, cli, l.d.Keys.Removed()); n != 0 {
		t.Errorf("%d removal markers left, want none", n)
	}
	s, _ := stretchesIn(t, cli, l, "gone")
	for n := 0; n <= maxPurgeTicks+5; n++ {
		if !s.Covers(tickAt(n)) {
			t.Fatalf("gone's tick %d not in its stretches %v", n, s)
		}
	}
}
