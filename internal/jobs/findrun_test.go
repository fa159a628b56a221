package jobs_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// GET /api/v1/runs/{id} of a run that took the lean protocol (no queue
// entry) says running while it runs, from its slot, with its holder.
func TestAnAssignedRunIsFoundWhileItRuns(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	n := etcd.node("solo", newConfig(httpJob("slow", "@every 1s", w.url("sleep=3s"))))
	var runID string
	poll.For(t, 30*time.Second, "a run of slow at the target", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for id, holder := range w.reached {
			if holder != "" && id != "" {
				runID = id
				return true
			}
		}
		return false
	})
	poll.For(t, 10*time.Second, "the run found running", func() bool {
		st, err := n.engine.FindRun(t.Context(), runID)
		return err == nil && st.State == "running" && st.Holder == "solo" && st.Job == "slow"
	})
}

// GET /api/v1/runs/{id} of a tick a worker shed into a chunk record (one
// record for the ticks of an instant, docs/design-shed.md) answers it
// finished, as the record of its own it would otherwise have; a tick the
// record does not name stays unknown, and a chunk record that cannot be
// read fails the lookup of its instant's ticks rather than call them
// unknown.
func TestAShedTickIsFoundInItsChunkRecord(t *testing.T) {
	etcd := startEtcd(t)
	far := jobstest.FarTick(time.Now())
	n := etcd.node("solo", newConfig(httpJob("report", far, "http://127.0.0.1:1/"), httpJob("sync", far, "http://127.0.0.1:1/")))
	at := time.Now().Add(-time.Minute).Truncate(time.Second).UTC()
	c := runs.ChunkRecord{At: at, EndedAt: at.Add(1500 * time.Millisecond), Runs: []runs.ShedRun{
		{Job: "report", Outcome: runs.Missed, Error: "not started: 1.5s late"},
	}}
	k := keys.New(testPrefix)
	if _, err := n.client.Put(t.Context(), k.ShedRecord(at, "w1.1", "g", 0), runs.EncodeChunkRecord(&c)); err != nil {
		t.Fatal(err)
	}
	want, _ := c.Find("report")
	st, err := n.engine.FindRun(t.Context(), runs.ID("report", at))
	if err != nil || st.State != "finished" || !reflect.DeepEqual(st.Record, want) {
		t.Errorf("FindRun(report's tick) = %+v, %v; want finished %+v", st, err, want)
	}
	if _, err := n.engine.FindRun(t.Context(), runs.ID("report", at)+"#1"); !errors.Is(err, jobs.ErrUnknownRun) {
		t.Errorf("FindRun(a shard id of report's tick) = %v, want ErrUnknownRun: a chunk record holds no shard", err)
	}
	if _, err := n.engine.FindRun(t.Context(), runs.ID("sync", at)); !errors.Is(err, jobs.ErrUnknownRun) {
		t.Errorf("FindRun(sync's tick, in no chunk record) = %v, want ErrUnknownRun", err)
	}
	if _, err := n.client.Put(t.Context(), k.ShedRecord(at, "w2.1", "g", 0), "{not json"); err != nil {
		t.Fatal(err)
	}
	_, err = n.engine.FindRun(t.Context(), runs.ID("sync", at))
	if err == nil || errors.Is(err, jobs.ErrUnknownRun) || !strings.Contains(err.Error(), k.ShedRecord(at, "w2.1", "g", 0)) {
		t.Errorf("FindRun(sync's tick, beside an unreadable chunk record) = %v, want an error naming that record", err)
	}
}
