package slots

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// What the view every replica keeps costs per slot event, as a burst
// brings them: chunks of 40 runs of different jobs claimed (a put each)
// and released (a delete each), with the gauges registered as a replica
// registers them. docs/performance.md: ~7 % of a replica's CPU at 2,000
// runs a second.
func BenchmarkViewAppliesSlotEvents(b *testing.B) {
	sem, err := New(etcdtest.Start(b).Client(), testLayout, nil, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	const chunk, jobs = 40, 1000
	at := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	puts, dels := make([][]*clientv3.Event, jobs/chunk), make([][]*clientv3.Event, jobs/chunk)
	for c := range puts {
		for i := range chunk {
			job := fmt.Sprintf("job-%04d", c*chunk+i)
			v, _ := json.Marshal(Value{RunID: job + "@" + at.Format(time.RFC3339), Holder: "r1.694d8b3c2f1a7e05", StartedAt: at, ScheduledAt: at})
			key := []byte(testLayout.Slot(job, 0))
			puts[c] = append(puts[c], &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: key, Value: v, CreateRevision: 100, ModRevision: 100, Lease: 7}})
			dels[c] = append(dels[c], &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: key, ModRevision: 101}})
		}
	}
	// Each event at a revision of its own after the last: the view drops
	// what it has seen.
	rev := int64(1000)
	stamp := func(evs []*clientv3.Event) []*clientv3.Event {
		for _, ev := range evs {
			rev++
			ev.Kv.ModRevision = rev
			if ev.Type == mvccpb.PUT {
				ev.Kv.CreateRevision = rev
			}
		}
		return evs
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c := n % len(puts)
		sem.apply(slotsView, stamp(puts[c]))
		sem.apply(slotsView, stamp(dels[c]))
		n++
	}
	if len(sem.List()) != 0 {
		b.Fatalf("%d slots held after every put was deleted", len(sem.List()))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*2*chunk), "ns/event")
}

// The view keeps each job's gauge rather than finding it by its labels on
// every event, and still follows the job's team: a job that moves to
// another team has its count in that team's series from the next change.
func TestAJobsGaugeFollowsItsTeam(t *testing.T) {
	team := "a"
	reg := prometheus.NewRegistry()
	sem, err := New(etcdtest.Start(t).Client(), testLayout, nil, reg, WithTeams(func(string) string { return team }))
	if err != nil {
		t.Fatal(err)
	}
	key := []byte(testLayout.Slot("j", 0))
	sem.apply(slotsView, []*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: key, Value: []byte(`{}`), CreateRevision: 10, ModRevision: 10}}})
	team = "b"
	sem.apply(slotsView, []*clientv3.Event{{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: key, ModRevision: 11}}})
	got, err := testutil.GatherAndCount(reg, "scheduler_slots_in_use")
	if err != nil || got != 2 {
		t.Fatalf("%d series of scheduler_slots_in_use (%v), want team a's and team b's", got, err)
	}
	want := `# HELP scheduler_slots_in_use Job slots held across the cluster, as seen by this replica's watch.
# TYPE scheduler_slots_in_use gauge
scheduler_slots_in_use{job="j",team="a"} 1
scheduler_slots_in_use{job="j",team="b"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "scheduler_slots_in_use"); err != nil {
		t.Error(err)
	}
}

// What the leader's questions of the view cost with 1,000 slots held, as
// in a burst of 1,000 lean runs: the overdue judge's (Of, once per
// tick it judges) and the reaper's (Token, once per running queue entry),
// beside List, which each of them called before and which decodes and
// sorts every held slot. go test ./internal/slots -run - -bench Questions
func BenchmarkTheLeadersQuestions(b *testing.B) {
	sem, err := New(etcdtest.Start(b).Client(), testLayout, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var puts []*clientv3.Event
	for i := range 1000 {
		job := fmt.Sprintf("job-%04d", i)
		v, _ := json.Marshal(Value{RunID: job + "@" + at.Format(time.RFC3339), Holder: "r1.694d8b3c2f1a7e05", StartedAt: at, ScheduledAt: at})
		rev := int64(1000 + i)
		puts = append(puts, &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(testLayout.Slot(job, 0)), Value: v, CreateRevision: rev, ModRevision: rev, Lease: 7}})
	}
	sem.apply(slotsView, puts)
	key := testLayout.Slot("job-0500", 0)
	b.Run("List", func(b *testing.B) {
		for b.Loop() {
			if len(sem.List()) != 1000 {
				b.Fatal("not 1,000 slots listed")
			}
		}
	})
	b.Run("Of", func(b *testing.B) {
		for b.Loop() {
			if len(sem.Of("job-0500")) != 1 {
				b.Fatal("not job-0500's one run")
			}
		}
	})
	b.Run("Token", func(b *testing.B) {
		for b.Loop() {
			if _, ok := sem.Token(key); !ok {
				b.Fatal("job-0500's slot not held")
			}
		}
	})
}
