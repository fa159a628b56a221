package overdue

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// What a tick is so far, from what etcd holds of it, as a table.
func TestJudge(t *testing.T) {
	at := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	job := &config.Job{Name: "backup", Retries: config.Retries{Max: 2}}
	id := runs.ID("backup", at)
	entry := func(id string) *queue.Entry { return queue.NewEntry(id, job, nil, at, at, 1, runs.Schedule) }
	rec := func(id string, o runs.Outcome) []byte {
		r := entry(id).Finished(o, 0, 1, at, at)
		return []byte(queue.EncodeRecord(&r))
	}
	failed := entry(id).Finished(runs.Failed, 0, 1, at, at)
	retry := []byte(entry(id).Retry(at, &failed).Encode())
	shard := func(k int) string { return runs.ShardID(id, k) }
	for _, c := range []struct {
		name      string
		read      Read
		want      string
		succeeded bool
	}{
		{"nothing", Read{}, NeverStarted, false},
		{"queued", Read{Entries: [][]byte{[]byte(entry(id).Encode())}}, Queued, false},
		{"running", Read{Entries: [][]byte{[]byte(entry(id).Running("r1", 0, at).Encode())}}, Running, false},
		{"assigned and running", Read{Executing: true}, Running, false},
		{"failed, retry waiting", Read{Entries: [][]byte{retry}, Records: [][]byte{rec(id, runs.Failed)}}, "failed", false},
		{"missed", Read{Records: [][]byte{rec(id, runs.Missed)}}, "missed", false},
		{"succeeded", Read{Records: [][]byte{rec(id, runs.Succeeded)}}, "succeeded", true},
		{"one shard failed, one succeeded", Read{Records: [][]byte{rec(shard(0), runs.Succeeded), rec(shard(1), runs.Failed)}}, "failed", false},
		{"one shard running, one succeeded", Read{Records: [][]byte{rec(shard(0), runs.Succeeded)},
			Entries: [][]byte{[]byte(entry(shard(1)).Running("r1", 1, at).Encode())}}, Running, false},
		{"one shard succeeded, the other unknown", Read{Records: [][]byte{rec(shard(0), runs.Succeeded)}}, Running, false},
		{"sharded tick ended", Read{FanIn: []byte(`{"outcome":"succeeded","shards":2}`)}, "succeeded", true},
	} {
		got, ok := c.read.Judge()
		if got != c.want || ok != c.succeeded {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, ok, c.want, c.succeeded)
		}
	}
}

// A job is overdue until a run of its overdue tick or a later one succeeds.
func TestIsOverdue(t *testing.T) {
	at := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	s := State{Through: at, Tick: &Tick{ScheduledAt: at}}
	for _, c := range []struct {
		last *Succeeded
		want bool
	}{
		{nil, true},
		{&Succeeded{ScheduledAt: at.Add(-24 * time.Hour)}, true},
		{&Succeeded{ScheduledAt: at}, false},
		{&Succeeded{ScheduledAt: at.Add(24 * time.Hour)}, false},
	} {
		if got := IsOverdue(s, c.last); got != c.want {
			t.Errorf("last success %+v: overdue %v, want %v", c.last, got, c.want)
		}
	}
	if IsOverdue(State{Through: at}, nil) {
		t.Error("no tick found overdue: overdue")
	}
}
