package leader

import (
	"slices"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// putSkipped writes job's record of each of the ticks ns, skipped, with
// its unstarted marker, as a worker's shed of its own writes it.
func putSkipped(t *testing.T, cli *clientv3.Client, l *leader, job string, ns ...int) {
	t.Helper()
	for _, n := range ns {
		id := runs.ID(job, tickAt(n))
		if _, err := cli.Txn(t.Context()).Then(
			clientv3.OpPut(l.d.Keys.Record(job, id), `{"outcome":"skipped"}`),
			clientv3.OpPut(l.d.Keys.UnstartedMark(job, id), ""),
		).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// putChunk writes the chunk record of tick n naming jobs (as the worker's
// shed will: docs/design-shed.md), at key index i of its instant, and
// returns its key.
func putChunk(t *testing.T, cli *clientv3.Client, l *leader, n, i int, jobs ...string) string {
	t.Helper()
	c := runs.ChunkRecord{At: tickAt(n), EndedAt: tickAt(n + 1)}
	for _, job := range jobs {
		c.Runs = append(c.Runs, runs.ShedRun{Job: job, Outcome: runs.Missed})
	}
	key := l.d.Keys.ShedRecord(tickAt(n), "w1", "g", i)
	if _, err := cli.Put(t.Context(), key, runs.EncodeChunkRecord(&c)); err != nil {
		t.Fatal(err)
	}
	return key
}

// indexChunks loads the leader's chunk index from etcd, as its mirror
// would.
func indexChunks(t *testing.T, cli *clientv3.Client, l *leader) {
	t.Helper()
	resp, err := cli.Get(t.Context(), l.d.Keys.Shed(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	l.d.Chunks.Reset(resp.Kvs, resp.Header.Revision)
}

// chunkJobs are the jobs the chunk record at key names; nil when it is
// gone.
func chunkJobs(t *testing.T, cli *clientv3.Client, key string) []string {
	t.Helper()
	resp, err := cli.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	c, err := runs.DecodeChunkRecord(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range c.Runs {
		out = append(out, r.Job)
	}
	return out
}

// A job's ticks in chunk records are more of its unstarted records
// (docs/design-shed.md, "Retention"): the prune keeps the newest
// skipped_history_limit of both kinds, in the order they were written,
// covers the ticks beyond it in the job's pruned stretches and takes them
// out of their chunk records, rewriting one that names other jobs without
// them and deleting one left empty. A rewrite does not make the ticks left
// in it look newer: they were written at its create revision. Each of
// counting the chunk ticks, taking them out and ordering them by create
// revision, left out, fails this.
func TestThePruneCountsAndTakesOutAJobsTicksInChunkRecords(t *testing.T) {
	ctx := t.Context()
	s, o := jobstest.Job("s", "@every 1s"), jobstest.Job("o", "@every 1s")
	s.SkippedHistoryLimit, o.SkippedHistoryLimit = 3, 1
	l, cli, _ := leaderOn(t, "/prunechunks/", jobstest.Config(s, o), coverT0)
	shared := putChunk(t, cli, l, 1, 0, "s", "o")
	putSkipped(t, cli, l, "s", 2)
	putChunk(t, cli, l, 3, 0, "o")
	putSkipped(t, cli, l, "s", 4)
	indexChunks(t, cli, l)
	if err := l.pruner.pruneJobs(ctx, []string{"s", "o"}); err != nil {
		t.Fatal(err)
	}
	if got := chunkJobs(t, cli, shared); !slices.Equal(got, []string{"s"}) {
		t.Fatalf("the chunk record of tick 1 names %v, want s's tick only: o's is beyond o's limit of 1, s has 3", got)
	}
	if st, _ := stretchesIn(t, cli, l, "o"); !st.Covers(tickAt(1)) {
		t.Errorf("o's stretches %v, want tick 1 covered: its record was taken out", st)
	}

	putSkipped(t, cli, l, "s", 5)
	indexChunks(t, cli, l)
	if err := l.pruner.pruneJobs(ctx, []string{"s", "o"}); err != nil {
		t.Fatal(err)
	}
	if got := chunkJobs(t, cli, shared); got != nil {
		t.Errorf("the chunk record of tick 1 names %v, want it deleted: s's tick there is its oldest of 4", got)
	}
	want := []string{runs.ID("s", tickAt(2)), runs.ID("s", tickAt(4)), runs.ID("s", tickAt(5))}
	if got := recordIDs(t, l, "s"); !slices.Equal(got, want) {
		t.Errorf("s's records %v, want %v", got, want)
	}
	if st, _ := stretchesIn(t, cli, l, "s"); !st.Covers(tickAt(1)) {
		t.Errorf("s's stretches %v, want tick 1 covered", st)
	}
}

// A chunk record changed since the index read it is left as it is: the
// take-out compares each record's revision, so a tick written into it
// since (or a rewrite by another round) is never lost.
func TestThePruneLeavesAChunkRecordChangedSinceItsRead(t *testing.T) {
	ctx := t.Context()
	s := jobstest.Job("s", "@every 1s")
	s.SkippedHistoryLimit = 1
	l, cli, _ := leaderOn(t, "/prunechunks2/", jobstest.Config(s), coverT0)
	first := putChunk(t, cli, l, 1, 0, "s")
	putChunk(t, cli, l, 2, 0, "s")
	indexChunks(t, cli, l)
	putChunk(t, cli, l, 1, 0, "s", "late") // rewritten since the index's read
	if err := l.pruner.pruneJobs(ctx, []string{"s"}); err != nil {
		t.Fatal(err)
	}
	if got := chunkJobs(t, cli, first); !slices.Equal(got, []string{"s", "late"}) {
		t.Errorf("the changed chunk record names %v, want it as rewritten", got)
	}
	indexChunks(t, cli, l)
	if err := l.pruner.pruneJobs(ctx, []string{"s"}); err != nil {
		t.Fatal(err)
	}
	if got := chunkJobs(t, cli, first); !slices.Equal(got, []string{"late"}) {
		t.Errorf("the chunk record names %v once read again, want s's tick out", got)
	}
}
