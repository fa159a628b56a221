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
	if len(sem.viewList()) != 0 {
		b.Fatalf("%d slots held after every put was deleted", len(sem.viewList()))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*2*chunk), "ns/event")
}

// The gauge of a job's slots is read at the scrape and follows the job's
// team: a job that moves to another team has its count in that team's
// series at the next scrape, and no series is left behind; a job that held
// slots shows 0 once it holds none.
func TestAJobsGaugeFollowsItsTeam(t *testing.T) {
	team := "a"
	reg := prometheus.NewRegistry()
	cli := etcdtest.Start(t).Client()
	sem, err := New(cli, testLayout, nil, reg, WithTeams(func(string) string { return team }))
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(want string) {
		t.Helper()
		want = "# HELP scheduler_slots_in_use Job slots held across the cluster, as etcd stores them at the scrape.\n# TYPE scheduler_slots_in_use gauge\n" + want
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "scheduler_slots_in_use"); err != nil {
			t.Error(err)
		}
	}
	key := testLayout.Slot("j", 0)
	if _, err := cli.Put(t.Context(), key, `{}`); err != nil {
		t.Fatal(err)
	}
	gauge(`scheduler_slots_in_use{job="j",team="a"} 1` + "\n")
	team = "b"
	if _, err := cli.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	gauge(`scheduler_slots_in_use{job="j",team="b"} 0` + "\n")
	if n := len(sem.viewList()); n != 0 {
		t.Errorf("the view holds %d slots: nothing wanted it", n)
	}
}

// What the leader's questions of the held slots cost with 1,000 held, as
// in a burst of 1,000 lean runs: the overdue judge's and the API's (HeldOf,
// a read of one job's slots), the API's list (Held, every slot) and the
// reaper's (Token, a lookup in the view, once per running queue entry).
// go test ./internal/slots -run - -bench Questions
func BenchmarkTheLeadersQuestions(b *testing.B) {
	cli := etcdtest.Start(b).Client()
	sem, err := New(cli, testLayout, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var puts []*clientv3.Event
	var ops []clientv3.Op
	for i := range 1000 {
		job := fmt.Sprintf("job-%04d", i)
		v, _ := json.Marshal(Value{RunID: job + "@" + at.Format(time.RFC3339), Holder: "r1.694d8b3c2f1a7e05", StartedAt: at, ScheduledAt: at})
		rev := int64(1000 + i)
		puts = append(puts, &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(testLayout.Slot(job, 0)), Value: v, CreateRevision: rev, ModRevision: rev, Lease: 7}})
		if ops = append(ops, clientv3.OpPut(testLayout.Slot(job, 0), string(v))); len(ops) == 100 {
			if _, err := cli.Txn(b.Context()).Then(ops...).Commit(); err != nil {
				b.Fatal(err)
			}
			ops = nil
		}
	}
	sem.apply(slotsView, puts)
	key := testLayout.Slot("job-0500", 0)
	b.Run("Held", func(b *testing.B) {
		for b.Loop() {
			if l, err := sem.Held(b.Context()); err != nil || len(l) != 1000 {
				b.Fatal("not 1,000 slots listed", err)
			}
		}
	})
	b.Run("HeldOf", func(b *testing.B) {
		for b.Loop() {
			if l, err := sem.HeldOf(b.Context(), "job-0500"); err != nil || len(l) != 1 {
				b.Fatal("not job-0500's one run", err)
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
