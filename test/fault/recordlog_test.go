package fault

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The record log reads chunk records (shed/, docs/design-shed.md) as
// writes of the ticks they name, in revision order with the records' own:
// a tick in a chunk record is recorded and accounted; a rewrite that takes
// a tick out (the prune's) deletes that tick and writes none of those it
// keeps again; a chunk record's delete deletes its ticks. checkPruned
// judges those deletes by the jobs' skipped_history_limit, as the records'
// own, and a tick both in a chunk record and in a record of its own is
// recorded twice, which checkRecordedOnce reports.
func TestTheRecordLogReadsChunkRecordsAsTheirTicksWrites(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := keys.New(prefix)
	at := time.Date(2026, 12, 4, 5, 0, 1, 0, time.UTC)
	twice, once := runs.ID("a", at), runs.ID("b", at)
	put := func(key, value string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	own := runs.Record{RunID: twice, Job: "a", Attempt: 1, Trigger: runs.Schedule, ScheduledAt: at, Outcome: runs.Succeeded}
	ownRev := put(l.Record("a", twice), queue.EncodeRecord(&own))
	c := runs.ChunkRecord{At: at, EndedAt: at.Add(2 * time.Second), Runs: []runs.ShedRun{
		{Job: "a", Outcome: runs.Missed}, {Job: "b", Outcome: runs.Missed},
	}}
	key := l.ShedRecord(at, "w.1", "g", 0)
	chunkRev := put(key, runs.EncodeChunkRecord(&c))
	left := c.Without(map[string]bool{"a": true})
	rewriteRev := put(key, runs.EncodeChunkRecord(&left))
	resp, err := cli.Delete(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	log, err := ReadRecordLog(ctx, cli, l, resp.Header.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 5 || log[0].Rev != ownRev || log[0].Chunk || !log[1].Chunk || log[1].Rev != chunkRev || !log[1].Unstarted ||
		log[3].Rev != rewriteRev || !log[3].Delete || log[3].RunID != twice || !log[4].Delete || log[4].RunID != once {
		t.Fatalf("record log %+v, want a's own put, the chunk record's two ticks put, a's deleted by the rewrite, b's by the delete", log)
	}
	f := recordsOf(log)
	if rec := f.last[once]; rec.Outcome != runs.Missed || !rec.ScheduledAt.Equal(at) || f.first[once] != chunkRev {
		t.Errorf("b's tick from its chunk record: %+v first written at %d; want missed at %s, written at %d", rec, f.first[once], at, chunkRev)
	}
	h := &History{Records: f.last, Writes: f.writes, RecordLog: log, Limits: map[string]Limits{"a": {10, 0}, "b": {10, 0}}}
	r := &Report{}
	checkPruned(h, r)
	if len(r.Violations) != 0 || r.Pruned != 2 {
		t.Errorf("checkPruned: violations %q, pruned %d; want both chunk ticks pruned, within skipped_history_limit 0", r.Violations, r.Pruned)
	}
	checkRecordedOnce(h, r)
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "recorded twice: "+twice) {
		t.Errorf("checkRecordedOnce: %q, want %s recorded twice and nothing else", r.Violations, twice)
	}
	h.Limits["b"] = Limits{10, 1}
	r = &Report{}
	if checkPruned(h, r); len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "b's record "+once) {
		t.Errorf("checkPruned: %q, want b's tick deleted under skipped_history_limit 1", r.Violations)
	}
}
