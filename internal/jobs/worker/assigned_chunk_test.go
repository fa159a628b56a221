package worker

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// protocolPeers is a cluster whose every member advertises at least this
// protocol (assign.Protocol's steps), and no other lean replica.
type protocolPeers int

func (p protocolPeers) Lean() ([]string, bool) { return nil, true }

func (p protocolPeers) Every(protocol int) bool { return int(p) >= protocol }

// startShedding starts a worker of three jobs shed when late (s1-s3) and
// told, whose missed record notifies a sink, among peers, and assigns it
// their ticks of three seconds ago: each is superseded by a newer tick.
func startShedding(t *testing.T, prefix string, peers LeanPeers) (*testWorker, time.Time) {
	t.Helper()
	late := func(name string) config.Job { return jobstest.HTTPJob(name, "@every 1s", "http://127.0.0.1:1/") }
	told := late("told")
	told.Notify = []string{"ops"}
	tw := startTestWorker(t, prefix, late("s1"), noExecutor{}, testWorkerOptions{peers: peers,
		jobs:  []config.Job{late("s2"), late("s3"), told},
		sinks: []config.Sink{{Name: "ops", URL: "http://127.0.0.1:1/", Format: config.FormatJSON, On: []string{string(runs.Missed)}}}})
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "s1", "s2", "s3", "told")
	return tw, at
}

// chunkRecords are the chunk records of the ticks due at at.
func chunkRecords(t *testing.T, tw *testWorker, at time.Time) []runs.ChunkRecord {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), tw.layout.ShedAt(at), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var out []runs.ChunkRecord
	for _, kv := range resp.Kvs {
		c, err := runs.DecodeChunkRecord(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A worker behind, in a cluster whose every member reads chunk records,
// records the late ticks whose record causes nothing in one chunk record
// (docs/design-shed.md, "Writer"), taken out of their assignment in the
// same transaction, and no record of their own; a tick whose record
// notifies keeps its own, and the assignment, claimed from as rewritten,
// is cleaned up once that is written.
func TestLateTicksAreShedInOneChunkRecord(t *testing.T) {
	tw, at := startShedding(t, "/lean-chunk/", protocolPeers(assign.Protocol))
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("told", at)); rec.Outcome != runs.Missed {
		t.Errorf("told: recorded %s %q, want missed", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	chunks := chunkRecords(t, tw, at)
	if len(chunks) != 1 {
		t.Fatalf("%d chunk records at %s, want 1", len(chunks), at)
	}
	var jobs []string
	for _, rec := range chunks[0].Records() {
		jobs = append(jobs, rec.Job)
		if rec.Outcome != runs.Missed || rec.Slot != runs.NoSlot || !rec.ScheduledAt.Equal(at) {
			t.Errorf("%s's tick in the chunk record: %+v, want missed at %s with no slot", rec.Job, rec, at)
		}
	}
	if slices.Sort(jobs); !slices.Equal(jobs, []string{"s1", "s2", "s3"}) {
		t.Errorf("the chunk record names %v, want s1-s3", jobs)
	}
	for _, job := range []string{"s1", "s2", "s3"} {
		if n := tw.count(t, tw.layout.JobRuns(job)); n != 0 {
			t.Errorf("%s: %d records of its own beside its tick in the chunk record, want none", job, n)
		}
	}
}

// While a member does not read chunk records (a release before
// assign.ReadsChunks, in a rolling upgrade), every shed tick keeps a
// record of its own: that member's backfill would find a tick in a chunk
// record without one, and run it again.
func TestNoChunkRecordWhileAMemberCannotReadThem(t *testing.T) {
	tw, at := startShedding(t, "/lean-chunk-gate/", protocolPeers(assign.ReadsChunks-1))
	for _, job := range []string{"s1", "s2", "s3", "told"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(job, at)); rec.Outcome != runs.Missed {
			t.Errorf("%s: recorded %s %q, want missed", job, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	if chunks := chunkRecords(t, tw, at); len(chunks) != 0 {
		t.Errorf("%d chunk records with a member that cannot read them, want none", len(chunks))
	}
}
