package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A job's last success is put at most once per successEvery by one
// worker (docs/protocol.md#last-successes): the first success of a job is
// put by its release, the ones after it within the time wait, and the
// newest of them is put successEvery after it waited, never over a success
// another worker put after its run's release; the drain puts what waits.
func TestALastSuccessIsPutOncePerIntervalAndNeverGoesBack(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC))
	cfg := jobstest.Config()
	s := newSuccesses(Deps{Client: cli, Clock: clock, Log: slog.New(slog.DiscardHandler), Config: func() *config.Config { return cfg }})

	layout := keys.New("/succ/")
	key := layout.LastSuccess("j")
	stored := func() (string, int64) {
		resp, err := cli.Get(t.Context(), key)
		if err != nil || len(resp.Kvs) == 0 {
			return "", 0
		}
		return string(resp.Kvs[0].Value), resp.Kvs[0].Version
	}
	// succeed is a run's release: its record and its last success, as
	// follow.End writes them; it says whether the success was left to wait.
	succeed := func(value string) bool {
		ops := []clientv3.Op{clientv3.OpPut(layout.Record("j", value), "rec"), clientv3.OpPut(key, value)}
		ops, waiting := s.take("j", key, ops, clock.Now())
		resp, err := cli.Txn(t.Context()).Then(ops...).Commit()
		if err != nil {
			t.Fatal(err)
		}
		if waiting != nil {
			s.wait("j", waiting, resp.Header.Revision)
		}
		return waiting != nil
	}

	if succeed("s1") {
		t.Fatal("the job's first success waits; it is put by its release")
	}
	for i, v := range []string{"s2", "s3"} {
		clock.Advance(4 * time.Second)
		if !succeed(v) {
			t.Fatalf("success %d within %s of the put one was put at once", i+2, successEvery)
		}
	}
	// s3 waits successEvery from its end, not from s1's put.
	clock.Advance(successEvery - time.Second)
	if due, _ := s.due(clock.Now(), false); len(due) != 0 {
		t.Fatalf("%d successes due %s after the newest waited", len(due), successEvery-time.Second)
	}
	if v, version := stored(); v != "s1" || version != 1 {
		t.Fatalf("stored %q (version %d) before the newest waited its time, want s1 put once", v, version)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	poll.Until(t, 30*time.Second, "the newest waiting success put once it waited its time", func() (bool, string) {
		// A second a look till Run took it: Run may set its timer after
		// an advance, so one advance might never reach it.
		s.mu.Lock()
		waiting := s.waiting
		s.mu.Unlock()
		if waiting > 0 {
			clock.Advance(time.Second)
		}
		v, version := stored()
		return v == "s3" && version == 2, v
	})

	// Another worker's success, ended after the one waiting here, stays.
	clock.Advance(time.Second)
	if !succeed("s4") {
		t.Fatal("a success within the time after a put was put at once")
	}
	if _, err := cli.Put(t.Context(), key, "s5 from another worker"); err != nil {
		t.Fatal(err)
	}
	s.flush(t.Context())
	if v, _ := stored(); v != "s5 from another worker" {
		t.Fatalf("stored %q: a waiting success went over one put after its release", v)
	}

	clock.Advance(time.Second)
	if !succeed("s6") {
		t.Fatal("a success within the time after a put was put at once")
	}
	s.flush(t.Context()) // the drain's
	if v, _ := stored(); v != "s6" {
		t.Fatalf("stored %q after the drain's flush, want s6", v)
	}
	clock.Advance(successEvery)
	if succeed("s7") {
		t.Fatalf("a success %s after the last put waits", successEvery)
	}
	if v, _ := stored(); v != "s7" {
		t.Fatalf("stored %q, want s7 put by its release", v)
	}

	// A release's put supersedes the success waiting: nothing waits after it.
	// s9 comes successEvery after s7's put but before s8's wait is over
	// (successEvery after s8): at that instant the loop would put s8 and
	// race the release.
	clock.Advance(time.Second)
	if !succeed("s8") {
		t.Fatal("a success within the time after a put was put at once")
	}
	clock.Advance(successEvery - time.Second/2)
	if succeed("s9") {
		t.Fatalf("a success %s after the last put waits", successEvery+time.Second/2)
	}
	s.mu.Lock()
	waiting := s.waiting
	s.mu.Unlock()
	if waiting != 0 {
		t.Fatalf("%d successes counted waiting after a put superseded the only one", waiting)
	}
}

// A waiting success put late goes over an older success put since its
// release (another worker's, that waited too and was put first), never
// over a newer one, and never brings back a key its job's removal deleted.
func TestAWaitingSuccessGoesOverAnOlderOnePutSince(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client()
	cfg := jobstest.Config()
	s := newSuccesses(Deps{Client: cli, Clock: clockwork.NewRealClock(), Log: slog.New(slog.DiscardHandler), Config: func() *config.Config { return cfg }})
	key := keys.New("/succ-late/").LastSuccess("j")
	t0 := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	success := func(run string, ended time.Duration) string {
		return overdue.Succeeded{RunID: run, ScheduledAt: t0, EndedAt: t0.Add(ended)}.Encode()
	}
	put := func(value string) int64 {
		resp, err := cli.Put(t.Context(), key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	stored := func() string { return etcdtest.Value(t, cli, key) }

	released := put(success("first", 0)) // our run's release, its success left to wait
	put(success("older", time.Second))   // another worker's, ended before ours, put late
	s.put(t.Context(), []*waitingSuccess{{key: key, value: success("ours", 2*time.Second), rev: released}})
	if got := stored(); got != success("ours", 2*time.Second) {
		t.Fatalf("stored %s, want ours: it ended after the one put since its release", got)
	}

	released = put(success("ours", 2*time.Second))
	put(success("newer", 5*time.Second))
	s.put(t.Context(), []*waitingSuccess{{key: key, value: success("ours again", 3*time.Second), rev: released}})
	if got := stored(); got != success("newer", 5*time.Second) {
		t.Fatalf("stored %s, want the newer success put since the release", got)
	}

	released = put(success("newer", 5*time.Second))
	if _, err := cli.Delete(t.Context(), key); err != nil { // the job removed
		t.Fatal(err)
	}
	s.put(t.Context(), []*waitingSuccess{{key: key, value: success("late", 6*time.Second), rev: released}})
	if got := stored(); got != "" {
		t.Fatalf("stored %s after the job's removal deleted the key", got)
	}
}
