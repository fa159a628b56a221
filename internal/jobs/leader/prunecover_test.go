package leader

import (
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/pruned"
	"github.com/etcdsched/scheduler/internal/runs"
)

var coverT0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// tickAt is coverT0 plus n seconds.
func tickAt(n int) time.Time { return coverT0.Add(time.Duration(n) * time.Second) }

// putTicks writes a succeeded record of job for each of the ticks ns, in
// that order (the prune deletes the first written first).
func putTicks(t *testing.T, cli *clientv3.Client, l *leader, job string, ns ...int) {
	t.Helper()
	for _, n := range ns {
		if _, err := cli.Put(t.Context(), l.d.Keys.Record(job, runs.ID(job, tickAt(n))), `{"outcome":"succeeded"}`); err != nil {
			t.Fatal(err)
		}
	}
}

// stretchesIn reads job's pruned stretches and the key's ModRevision.
func stretchesIn(t *testing.T, cli *clientv3.Client, l *leader, job string) (pruned.Stretches, int64) {
	t.Helper()
	resp, err := cli.Get(t.Context(), l.d.Keys.Pruned(job))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0
	}
	s, err := pruned.Decode(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return s, resp.Kvs[0].ModRevision
}

func between(a, b int) pruned.Stretches { return pruned.Stretches{{From: tickAt(a), To: tickAt(b)}} }

// The prune puts the ticks it deletes in the job's pruned stretches
// (which a backfill takes as existing) before deleting them; a stretch
// runs on over the records kept, up to a tick with no record, so the next
// rounds, deleting those, write nothing; past it, the stretch grows. Without
// coverPruned a backfill queued every tick whose record was pruned.
func TestThePruneCoversTheTicksItDeletes(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("c", "@every 1s")
	j.HistoryLimit = 10
	l, cli, _ := leaderOn(t, "/cover/", jobstest.Config(j), time.Time{})
	ticks := []int{}
	for n := range 25 {
		if n != 22 { // 22 in flight: no record yet
			ticks = append(ticks, n)
		}
	}
	putTicks(t, cli, l, "c", ticks...)
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if got := recordIDs(t, l, "c"); len(got) != 10 || got[0] != runs.ID("c", tickAt(14)) {
		t.Fatalf("kept %v, want the 10 newest from 14", got)
	}
	s, rev := stretchesIn(t, cli, l, "c")
	if want := between(0, 21); !slices.Equal(s, want) {
		t.Fatalf("stretches %v, want %v: the deleted 0-13 and the kept up to the gap at 22", s, want)
	}

	putTicks(t, cli, l, "c", 22, 25, 26, 27) // deletes 14-17: in the stretch
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if _, rev2 := stretchesIn(t, cli, l, "c"); rev2 != rev {
		t.Errorf("a round deleting only covered ticks wrote the stretches (revision %d, was %d)", rev2, rev)
	}
	putTicks(t, cli, l, "c", 28, 29, 30, 31, 32, 33, 34, 35, 36, 37) // deletes 18-27
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := stretchesIn(t, cli, l, "c"); !slices.Equal(s, between(0, 37)) {
		t.Errorf("stretches %v, want %v", s, between(0, 37))
	}
	if got := recordIDs(t, l, "c"); len(got) != 10 || got[0] != runs.ID("c", tickAt(28)) {
		t.Errorf("kept %v, want 28-37", got)
	}
}

// Stretches changed by another writer since the term read them (the
// removed jobs' cleanup) fail the round's write and its deletes; the
// next round reads them again and keeps both.
func TestThePruneLosesNoStretchAnotherWriterPut(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("c", "@every 1s")
	j.HistoryLimit = 10
	l, cli, _ := leaderOn(t, "/cover2/", jobstest.Config(j), time.Time{})
	putTicks(t, cli, l, "c", 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110)
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	other := pruned.Stretches{{From: tickAt(0), To: tickAt(5)}, {From: tickAt(100), To: tickAt(110)}}
	if _, err := cli.Put(ctx, l.d.Keys.Pruned("c"), other.Encode()); err != nil {
		t.Fatal(err)
	}
	putTicks(t, cli, l, "c", 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131) // deletes 101-110, 120, 121: past the stretch
	err := l.pruner.pruneJobs(ctx, []string{"c"})
	if !errors.Is(err, errStretchesMoved) {
		t.Fatalf("prune over moved stretches: %v, want errStretchesMoved", err)
	}
	if n := len(recordIDs(t, l, "c")); n != 22 {
		t.Errorf("%d records after a failed cover, want all 22: none deleted", n)
	}
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	s, _ := stretchesIn(t, cli, l, "c")
	for _, n := range []int{0, 5, 100, 110, 120, 121} {
		if !s.Covers(tickAt(n)) {
			t.Errorf("tick %d not in %v", n, s)
		}
	}
}

// A removed job's cleanup deletes its records with their ticks in one
// stretch, from the earliest to the latest (its schedule is gone); should
// it come back, a backfill takes them as existing.
func TestAPurgedJobsTicksStayCovered(t *testing.T) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cfg := jobstest.Config(jobstest.Job("keep", "@every 1s"))
	cfg.Cluster.RemovedHistoryTTL = config.Duration(time.Minute)
	l, cli, clock := leaderOn(t, "/cover3/", cfg, start)
	putTicks(t, cli, l, "gone", 3, 4, 9)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, err := l.removed.round(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cli, l.d.Keys.JobRuns("gone")); n != 0 {
		t.Fatalf("%d records of gone left after its TTL", n)
	}
	if s, _ := stretchesIn(t, cli, l, "gone"); !slices.Equal(s, between(3, 9)) {
		t.Errorf("stretches %v, want %v", s, between(3, 9))
	}
}

// Stretches that cannot be read keep the job's records (a delete could
// not be covered: a backfill would run them again once the key is
// mended) and are read again each round; mended, the prune goes on from
// them. A removed job's cleanup waits the same way.
func TestUnreadableStretchesKeepTheRecords(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("c", "@every 1s")
	j.HistoryLimit = 10
	l, cli, _ := leaderOn(t, "/cover4/", jobstest.Config(j), time.Time{})
	if _, err := cli.Put(ctx, l.d.Keys.Pruned("c"), "yesterday"); err != nil {
		t.Fatal(err)
	}
	putTicks(t, cli, l, "c", 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if n := len(recordIDs(t, l, "c")); n != 12 {
		t.Fatalf("%d records left under unreadable stretches, want all 12", n)
	}
	if _, err := cli.Put(ctx, l.d.Keys.Pruned("c"), between(0, 5).Encode()); err != nil {
		t.Fatal(err)
	}
	if err := l.pruner.pruneJobs(ctx, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if n := len(recordIDs(t, l, "c")); n != 10 {
		t.Errorf("%d records left once mended, want 10", n)
	}
	s, _ := stretchesIn(t, cli, l, "c")
	for _, n := range []int{0, 5, 10, 11, 21} {
		if !s.Covers(tickAt(n)) {
			t.Errorf("tick %d not in %v", n, s)
		}
	}

	if _, err := cli.Put(ctx, l.d.Keys.Pruned("gone"), "yesterday"); err != nil {
		t.Fatal(err)
	}
	putTicks(t, cli, l, "gone", 1, 2)
	if _, _, err := l.purgeCover(ctx, "gone", nil); err == nil {
		t.Error("a removed job's cleanup went on over unreadable stretches")
	}
}
