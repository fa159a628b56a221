package worker

import (
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

func membersOf(layout keys.Layout, ids ...string) *members {
	m := newMembers(layout)
	kvs := make([]*mvccpb.KeyValue, len(ids))
	for i, id := range ids {
		kvs[i] = &mvccpb.KeyValue{Key: []byte(layout.Member(id)), ModRevision: 1}
	}
	m.Reset(kvs, 1)
	return m
}

// first is the member that ranks itself 0 for key; every member ranks
// itself, and together they hold each place once.
func first(t *testing.T, m *members, key string) string {
	t.Helper()
	places := map[int]string{}
	for _, id := range m.ids.Keys() {
		r := m.rank(id, key, time.Time{})
		if other, ok := places[r]; ok {
			t.Fatalf("%s: %s and %s both rank %d", key, id, other, r)
		}
		places[r] = id
	}
	for i := range m.ids.Len() {
		if _, ok := places[i]; !ok {
			t.Fatalf("%s: nobody ranks %d: %v", key, i, places)
		}
	}
	return places[0]
}

// The runs due at one instant spread over the members: each is first for
// about its share, whatever the ids look like. With FNV-1a alone every
// job's run of an instant ranked one member first, or split on one bit of
// the job's name (500/500/0 of 1,000), so one replica took an instant's
// claims and, dead, delayed them all by a backup's wait.
func TestRankSpreadsAnInstantsRunsOverMembers(t *testing.T) {
	layout := keys.New("/scheduler/")
	at := time.Date(2026, 11, 23, 11, 49, 6, 0, time.UTC)
	for _, ids := range [][]string{
		{"r1", "r2", "r3"},
		{"scheduler-6c9f7d5b8-x2k4p", "scheduler-6c9f7d5b8-x2k4q", "scheduler-6c9f7d5b8-x2k4r", "scheduler-6c9f7d5b8-9zzl2", "scheduler-6c9f7d5b8-7mmd1"},
	} {
		m := membersOf(layout, ids...)
		for tick := range 3 {
			due := at.Add(time.Duration(tick) * time.Second)
			firsts := map[string]int{}
			const jobs = 1000
			for i := range jobs {
				job := fmt.Sprintf("s1-%05d", i)
				firsts[first(t, m, layout.Entry(job, runs.ID(job, due))+"#1")]++
			}
			share := jobs / len(ids)
			for _, id := range ids {
				if n := firsts[id]; n < share*3/4 || n > share*5/4 {
					t.Errorf("%d members, tick %s: %s first for %d of %d runs, want about %d: %v", len(ids), due.Format(time.TimeOnly), id, n, jobs, share, firsts)
				}
			}
		}
	}
}

// Ten jobs @every 100ms: at hardly any instant do all ten rank one member
// first (independent choices would do so once in ~20,000 instants).
func TestRankVariesAcrossJobsOfOneInstant(t *testing.T) {
	layout := keys.New("/scheduler/")
	m := membersOf(layout, "r1", "r2", "r3")
	at := time.Date(2026, 11, 23, 11, 49, 6, 0, time.UTC)
	same := 0
	for tick := range 100 {
		due := at.Add(time.Duration(tick) * 100 * time.Millisecond)
		seen := map[string]bool{}
		for i := range 10 {
			job := fmt.Sprintf("fo-%02d", i)
			seen[first(t, m, layout.Entry(job, runs.ID(job, due))+"#1")] = true
		}
		if len(seen) == 1 {
			same++
		}
	}
	if same > 2 {
		t.Errorf("at %d of 100 instants all ten jobs' runs rank one member first", same)
	}
}
