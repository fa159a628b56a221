package shed

import (
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A tick keeps its chunk record's create revision across a rewrite that
// takes other ticks out (the prune's), which is where it sorts among its
// job's records; a tick taken out leaves its job's ticks, and a job with
// none left the index's jobs.
func TestTheIndexKeepsATicksCreateRevisionAcrossARewrite(t *testing.T) {
	k := keys.New("/s/")
	at := time.Date(2026, 12, 4, 8, 0, 1, 0, time.UTC)
	key := k.ShedRecord(at, "w", "g", 0)
	put := func(rev, created int64, jobs ...string) *clientv3.Event {
		c := runs.ChunkRecord{At: at, EndedAt: at.Add(time.Second)}
		for _, j := range jobs {
			c.Runs = append(c.Runs, runs.ShedRun{Job: j, Outcome: runs.Skipped})
		}
		return &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(key),
			Value: []byte(runs.EncodeChunkRecord(&c)), ModRevision: rev, CreateRevision: created}}
	}
	x := NewIndex(k, nil)
	x.Reset(nil, 1)
	x.Apply([]*clientv3.Event{put(5, 5, "a", "b")}, 5)
	jobs := x.Jobs()
	if slices.Sort(jobs); !slices.Equal(jobs, []string{"a", "b"}) {
		t.Errorf("jobs with chunk ticks %v, want a and b", jobs)
	}
	x.Apply([]*clientv3.Event{put(9, 5, "b")}, 9)
	ticks := x.Job("b")
	if len(ticks) != 1 || ticks[0].Created != 5 || ticks[0].Rev != 9 || ticks[0].Key != key {
		t.Errorf("b's ticks %+v, want one at %s, created at 5, last written at 9", ticks, key)
	}
	if a := x.Job("a"); len(a) != 0 {
		t.Errorf("a's ticks %+v after the rewrite took it out, want none", a)
	}
	if jobs = x.Jobs(); !slices.Equal(jobs, []string{"b"}) {
		t.Errorf("jobs with chunk ticks %v, want b", jobs)
	}
}
