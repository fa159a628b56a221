package leader

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Pruning by key ranges deletes exactly what pruning key by key deletes:
// histories written out of their ticks' order, skips among runs that
// executed, manual runs among ticks, runs of jobs whose names share a
// prefix. The same histories are written under two prefixes; one is
// pruned by pruneJobs, the other key by key (each record beyond its limit
// and its marker, deleteUnchanged), and what is left must be the same.
func TestPruningByRangesDeletesWhatPruningKeyByKeyDoes(t *testing.T) {
	ctx := t.Context()
	var jobs []config.Job
	for _, name := range []string{"a", "ab", "b", "c"} {
		j := jobstest.Job(name, "@every 1s")
		j.HistoryLimit, j.SkippedHistoryLimit = 5, 2
		jobs = append(jobs, j)
	}
	cfg := jobstest.Config(jobs...)
	cli := etcdtest.Start(t).Client()
	byRanges := newTestLeader(t, cli, "/spans/", cfg, clockwork.NewFakeClock())
	byKeys := newTestLeader(t, cli, "/keys/", cfg, clockwork.NewFakeClock())
	rng := rand.New(rand.NewPCG(7, 38))
	for round := range 12 {
		for _, j := range jobs {
			for _, rec := range randomHistory(rng, j.Name, round) {
				writeRecord(t, byRanges, rec)
				writeRecord(t, byKeys, rec)
			}
		}
		names := []string{"a", "ab", "b", "c"}
		if err := byRanges.pruner.pruneJobs(ctx, names); err != nil {
			t.Fatal(err)
		}
		pruneKeyByKey(t, byKeys, names)
		for _, dir := range []string{"runs/", "unstarted/"} {
			got, want := stored(t, cli, "/spans/"+dir), stored(t, cli, "/keys/"+dir)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, %s: by ranges left %d keys, key by key %d:\n%v\n%v", round, dir, len(got), len(want), got, want)
			}
		}
	}
	if n := len(stored(t, cli, "/spans/runs/")); n != 4*(5+2) {
		t.Errorf("%d records left, want each job's 5 executed and 2 skipped", n)
	}
}

// randomHistory is 12 records of job in a random order of writing: ticks
// due on the seconds of round (some skipped or missed), a manual run.
func randomHistory(rng *rand.Rand, job string, round int) []runs.Record {
	base := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC).Add(time.Duration(round) * time.Minute)
	var out []runs.Record
	for i := range 11 {
		at := base.Add(time.Duration(i) * time.Second)
		rec := tickRecord(job, at, runs.Succeeded)
		switch rng.IntN(4) {
		case 0:
			rec.Outcome = runs.Skipped
		case 1:
			rec.Outcome = runs.Missed
		}
		out = append(out, rec)
	}
	out = append(out, runs.Record{RunID: runs.ManualID(job, fmt.Sprintf("%02d", round)), Job: job, Outcome: runs.Failed})
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// pruneKeyByKey is the pruning before key ranges: every record beyond its
// job's limits, and its marker, deleted with its own compare.
func pruneKeyByKey(t *testing.T, l *leader, jobs []string) {
	t.Helper()
	for _, job := range jobs {
		records, err := l.d.Client.Get(t.Context(), l.d.Keys.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
		if err != nil {
			t.Fatal(err)
		}
		marks, err := l.d.Client.Get(t.Context(), l.d.Keys.Unstarted(job), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var dels []seenKey
		old, _ := l.pruner.beyondLimits(job, records.Kvs, marks.Kvs, nil)
		for key, o := range old {
			dels = append(dels, seenKey{key: key, rev: revOf(records.Kvs, key)})
			if o.mark != nil {
				dels = append(dels, seenKey{key: string(o.mark.Key), rev: o.mark.ModRevision})
			}
		}
		if err := l.deleteUnchanged(t.Context(), dels); err != nil {
			t.Fatal(err)
		}
	}
}

func revOf(kvs []*mvccpb.KeyValue, key string) int64 {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.ModRevision
		}
	}
	return 0
}

// A span's keys go only while every key in its range is as read: a record
// rewritten since the read (a retried run's final record) and one written
// since into the range (a late record of an older tick) stay; the rest of
// the span goes key by key.
func TestASpanChangedSinceTheReadLosesNothingNew(t *testing.T) {
	ctx := t.Context()
	l, cli, _ := leaderOn(t, "/spans-changed/", jobstest.Config(jobstest.Job("p", "@every 1s")), time.Time{})
	at := func(i int) time.Time { return time.Date(2026, 12, 1, 22, 0, i, 0, time.UTC) }
	put := func(i int, outcome runs.Outcome) { writeRecord(t, l, tickRecord("p", at(i), outcome)) }
	for i := range 10 {
		if i != 4 {
			put(i, runs.Skipped)
		}
	}
	resp, err := cli.Get(ctx, l.d.Keys.JobRuns("p"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	marks, err := cli.Get(ctx, l.d.Keys.Unstarted("p"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]oldRecord{}
	for _, kv := range resp.Kvs {
		old[string(kv.Key)] = oldRecord{mark: markOf(l, marks.Kvs, string(kv.Key))}
	}
	spans := spansOf(resp.Kvs, old)
	if len(spans) != 1 {
		t.Fatalf("%d spans of 9 consecutive records to delete, want 1", len(spans))
	}
	put(2, runs.Succeeded) // rewritten since the read
	put(4, runs.Missed)    // written since, inside the span's range
	if err := l.deleteSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	want := []string{runs.ID("p", at(2)), runs.ID("p", at(4))}
	if got := stored(t, cli, l.d.Keys.JobRuns("p")); !slices.Equal(got, want) {
		t.Errorf("records left %v, want only %v", got, want)
	}
	if got := stored(t, cli, l.d.Keys.Unstarted("p")); !slices.Equal(got, want[1:]) {
		t.Errorf("markers left %v, want only the new miss's %v", got, want[1:])
	}
}

func markOf(l *leader, marks []*mvccpb.KeyValue, recordKey string) *mvccpb.KeyValue {
	for _, kv := range marks {
		if l.d.Keys.RecordRun(string(kv.Key)) == l.d.Keys.RecordRun(recordKey) {
			return kv
		}
	}
	return nil
}

// A job whose ticks are recorded in their order prunes in one span: a
// compare and a delete for all its records beyond the limit, whatever
// their number (the cost a run pays in a steady state).
func TestATickOrderedHistoryPrunesInOneSpan(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("steady", "@every 1s")
	j.HistoryLimit = 100
	l, cli, _ := leaderOn(t, "/spans-steady/", jobstest.Config(j), time.Time{})
	put := func(from, to int) {
		for i := from; i < to; i++ {
			at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
			writeRecord(t, l, tickRecord("steady", at, runs.Succeeded))
		}
	}
	prune := func() int {
		before := indexOps(t)
		if err := l.pruner.pruneJobs(ctx, []string{"steady"}); err != nil {
			t.Fatal(err)
		}
		if n := len(stored(t, cli, l.d.Keys.JobRuns("steady"))); n != 100 {
			t.Fatalf("%d records left, want 100", n)
		}
		return indexOps(t) - before
	}
	put(0, 110)
	// The term's first round also reads the job's pruned stretches and
	// writes them over every record it keeps (prunecover.go): a read, then
	// the fence, a compare and a put.
	if ops := prune(); ops > 11 {
		t.Errorf("the first round pruning 10 records cost %d index operations, want at most 11", ops)
	}
	put(110, 120)
	// Then the read (two ranges), the assignments' keys (prunespare.go),
	// the fence, the span's compare and its delete: 6, against 3 + 1 + 2 ×
	// 10 key by key; the stretches already cover the ticks deleted.
	if ops := prune(); ops > 7 {
		t.Errorf("pruning 10 records cost %d index operations, want at most 7", ops)
	}
}

// indexOps is etcd's index operations so far (etcd_mvcc range, put and
// delete counters: an embedded member counts in this process's default
// registry; the package's tests do not run in parallel).
func indexOps(t *testing.T) int {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		switch f.GetName() {
		case "etcd_mvcc_range_total", "etcd_mvcc_put_total", "etcd_mvcc_delete_total":
			for _, m := range f.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	if n == 0 {
		t.Fatal("no etcd_mvcc counters in the default registry")
	}
	return int(n)
}

// A span never covers a record to keep, even one its compare would pass:
// a skip kept under skipped_history_limit, written before runs that
// executed and are pruned on both sides of it in key order, stays.
func TestASpanNeverCoversARecordToKeep(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("mixed", "@every 1s")
	j.HistoryLimit, j.SkippedHistoryLimit = 1, 5
	l, cli, _ := leaderOn(t, "/spans-keep/", jobstest.Config(j), time.Time{})
	at := func(i int) time.Time { return time.Date(2026, 12, 1, 22, 0, i, 0, time.UTC) }
	for i, outcome := range []runs.Outcome{runs.Succeeded, runs.Skipped, runs.Succeeded, runs.Succeeded} {
		writeRecord(t, l, tickRecord("mixed", at(i), outcome))
	}
	if err := l.pruner.pruneJobs(ctx, []string{"mixed"}); err != nil {
		t.Fatal(err)
	}
	want := []string{runs.ID("mixed", at(1)), runs.ID("mixed", at(3))}
	if got := stored(t, cli, l.d.Keys.JobRuns("mixed")); !slices.Equal(got, want) {
		t.Errorf("records left %v, want the skip and the newest run %v", got, want)
	}
}

// A span is at most maxSpanKeys records and markers, so that one whose
// compare fails goes key by key in a transaction etcd takes (at most 128
// operations): a job's first round after its limit was lowered deletes
// 149 consecutive records, one of them rewritten since the read.
func TestALargePruneChangedSinceTheReadStillGoes(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("lowered", "@every 1s")
	j.HistoryLimit = 1
	l, cli, _ := leaderOn(t, "/spans-large/", jobstest.Config(j), time.Time{})
	at := func(i int) time.Time {
		return time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	}
	put := func(i int) { writeRecord(t, l, tickRecord("lowered", at(i), runs.Succeeded)) }
	for i := range 150 {
		put(i)
	}
	records, err := cli.Get(ctx, l.d.Keys.JobRuns("lowered"), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := l.pruner.beyondLimits("lowered", records.Kvs, nil, nil)
	spans := spansOf(records.Kvs, old)
	for _, s := range spans {
		if len(s.seen) > maxSpanKeys {
			t.Errorf("a span of %d keys, want at most %d", len(s.seen), maxSpanKeys)
		}
	}
	put(3) // a retried run's final record, since the read
	if err := l.deleteSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	want := []string{runs.ID("lowered", at(3)), runs.ID("lowered", at(149))}
	if got := stored(t, cli, l.d.Keys.JobRuns("lowered")); !slices.Equal(got, want) {
		t.Errorf("records left %v, want the rewritten one and the newest: %v", got, want)
	}
}

// writeRecord writes rec as the engine does (queue.RecordOps: a record of
// a run that did not start with its marker).
func writeRecord(t *testing.T, l *leader, rec runs.Record) {
	t.Helper()
	if _, err := l.d.Client.Txn(t.Context()).Then(queue.RecordOps(l.d.Keys, &rec)...).Commit(); err != nil {
		t.Fatal(err)
	}
}

// tickRecord is the record of job's tick at at, ended with outcome.
func tickRecord(job string, at time.Time, outcome runs.Outcome) runs.Record {
	return runs.Record{RunID: runs.ID(job, at), Job: job, ScheduledAt: at, Outcome: outcome}
}
