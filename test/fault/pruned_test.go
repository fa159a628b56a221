package fault

import (
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The prune's property on hand-made record logs: deletes beyond each
// limit pass, a delete of one of the records written last is reported,
// each kind against its own limit.
func TestCheckPrunedHoldsDeletesToTheLimits(t *testing.T) {
	put := func(rev int64, id string, o runs.Outcome) RecordEvent {
		rec := runs.Record{RunID: id, Job: "j", Outcome: o}
		return RecordEvent{Rev: rev, Job: "j", RunID: id, Record: rec, Unstarted: queue.Unstarted(&rec)}
	}
	// d's retry after its lost attempt, skipped: no marker (it executed),
	// or, as replicas before 12-02 wrote it, with one.
	retrySkipped := func(rev int64, marked bool) RecordEvent {
		rec := runs.Record{RunID: "d", Job: "j", Outcome: runs.Skipped, Previous: []runs.Attempt{{Attempt: 1, Outcome: runs.Lost}}}
		return RecordEvent{Rev: rev, Job: "j", RunID: "d", Record: rec, Unstarted: marked}
	}
	del := func(rev int64, id string) RecordEvent {
		return RecordEvent{Rev: rev, Job: "j", RunID: id, Delete: true}
	}
	// Four runs, two skips (the skips a chunk's, one revision), then the
	// prune's transaction at revision 10.
	base := []RecordEvent{put(1, "a", runs.Succeeded), put(2, "b", runs.Failed), put(3, "s1", runs.Skipped), put(3, "s2", runs.Skipped),
		put(4, "c", runs.Succeeded), put(5, "d", runs.Lost)}
	tests := []struct {
		name    string
		deletes []RecordEvent
		want    string // "" = no violation
	}{
		{"the oldest beyond each limit", []RecordEvent{del(10, "a"), del(10, "b"), del(10, "s1")}, ""},
		{"one of a revision's skips, the other kept", []RecordEvent{del(10, "s2")}, ""},
		{"one executed too many", []RecordEvent{del(10, "a"), del(10, "b"), del(10, "c")}, "pruned: j's record c (written at revision 4) deleted at revision 10 with 1 of its kind as late or later kept, under history_limit 2"},
		{"a newer one deleted, an older kept", []RecordEvent{del(10, "a"), del(10, "d")}, "record d"},
		{"both skips", []RecordEvent{del(10, "s1"), del(10, "s2")}, "under skipped_history_limit 1"},
		{"a later prune of what is left", []RecordEvent{del(10, "a"), del(10, "b"), put(11, "e", runs.Succeeded), del(12, "c")}, ""},
		{"a lost run's retry skipped counts as executed", []RecordEvent{retrySkipped(6, false), del(10, "a"), del(10, "b")}, ""},
		{"by its marker where an older replica wrote one", []RecordEvent{retrySkipped(6, true), del(10, "a"), del(10, "b")}, "record b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := append(append([]RecordEvent{}, base...), tc.deletes...)
			h := &History{RecordLog: log, Limits: map[string]Limits{"j": {Executed: 2, Unstarted: 1}}}
			r := &Report{}
			checkPruned(h, r)
			got := strings.Join(r.Violations, "\n")
			if tc.want == "" && got != "" {
				t.Fatalf("violations %q, want none", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("violations %q, want one with %q", got, tc.want)
			}
		})
	}
}

// A delete of a record of a job whose limits the checker does not know is
// reported, not passed.
func TestCheckPrunedReportsAJobOfNoKnownLimits(t *testing.T) {
	h := &History{RecordLog: []RecordEvent{
		{Rev: 1, Job: "other", RunID: "x", Record: runs.Record{Outcome: runs.Succeeded}},
		{Rev: 2, Job: "other", RunID: "x", Delete: true},
	}, Limits: map[string]Limits{}}
	r := &Report{}
	checkPruned(h, r)
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0], "a job of no known limits") || r.Pruned != 1 {
		t.Fatalf("violations %q, pruned %d: want the one delete reported", r.Violations, r.Pruned)
	}
}

// A tick whose record was pruned is still accounted for: the fold keeps
// its last write, its first revision and its writes across a delete.
func TestRecordsOfKeepsPrunedRecords(t *testing.T) {
	log := []RecordEvent{
		{Rev: 3, Job: "j", RunID: "a", Record: runs.Record{RunID: "a", Outcome: runs.Failed, Attempt: 1}},
		{Rev: 5, Job: "j", RunID: "a", Record: runs.Record{RunID: "a", Outcome: runs.Succeeded, Attempt: 2}},
		{Rev: 9, Job: "j", RunID: "a", Delete: true},
		{Rev: 7, Job: "j", RunID: "b", Record: runs.Record{RunID: "b", Outcome: runs.Skipped}},
	}
	f := recordsOf(log)
	if rec := f.last["a"]; rec.Outcome != runs.Succeeded || rec.Attempt != 2 {
		t.Errorf("a's record %+v, want its last write (succeeded, attempt 2)", rec)
	}
	if f.first["a"] != 3 || f.writes["a"] != 2 || !f.deleted["a"] {
		t.Errorf("a: first %d, writes %d, deleted %v; want 3, 2, true", f.first["a"], f.writes["a"], f.deleted["a"])
	}
	if f.deleted["b"] || f.writes["b"] != 1 {
		t.Errorf("b: deleted %v, writes %d; want false, 1", f.deleted["b"], f.writes["b"])
	}
}
