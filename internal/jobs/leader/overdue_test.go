package leader

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// overdueLeader is a leader of a nightly job with overdue_after 3h whose
// sink wants "overdue", with its overdue view, at 2026-11-25 00:00.
func overdueLeader(t *testing.T) (*leader, *clientv3.Client, func()) {
	job := jobstest.Job("backup", "0 2 * * *")
	job.OverdueAfter = config.Duration(3 * time.Hour)
	cfg := jobstest.Config(job)
	cfg.Notify.Sinks = []config.Sink{{Name: "ops", URL: "http://127.0.0.1:1/", Format: config.FormatJSON, On: []string{config.Overdue}}}
	cfg.Notify.Default = []string{"ops"}
	l, cli, _ := leaderOn(t, "/overdue/", cfg, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	sem, err := slots.New(cli, l.d.Keys, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.d.Overdue, l.d.Slots = overdue.NewView(l.d.Keys), sem
	l.d.defaults() // the Last its judge reads through
	reload := func() {
		resp, err := cli.Get(t.Context(), l.d.Keys.Jobs(), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		l.d.Overdue.Reset(resp.Kvs, resp.Header.Revision)
		l.d.Paused.Reset(resp.Kvs, resp.Header.Revision)
	}
	return l, cli, reload
}

// overdueNotes are the overdue notifications in the outbox, by tick.
func overdueNotes(t *testing.T, l *leader, cli *clientv3.Client) map[string]*notify.Notification {
	resp, err := cli.Get(t.Context(), l.d.Keys.Outbox(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*notify.Notification{}
	for _, kv := range resp.Kvs {
		n, err := notify.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if n.Event == config.Overdue {
			if out[n.Record.RunID] != nil || kv.Version != 1 {
				t.Errorf("tick %s notified overdue twice", n.Record.RunID)
			}
			out[n.Record.RunID] = n
		}
	}
	return out
}

// Each nightly tick is judged at 02:00 + 3h, from what etcd holds of it:
// never started, failed with its retry waiting, still running, succeeded
// (not overdue), ones of a paused job (not overdue, the one scheduled as
// the pause ended too) and one after the resume (overdue). A judge whose
// view is behind its own write writes nothing twice, and a deposed
// leader's judge writes nothing at all. The notification names the job's last
// success, and the state (the gauge) clears once a later tick succeeds. A
// lean run, which has no entry, is running by its slot.
func TestOverdueJudgesEachTickOnce(t *testing.T) {
	l, cli, reload := overdueLeader(t)
	clock := l.d.Clock.(interface{ Advance(time.Duration) })
	ctx := t.Context()
	j := newJudge(l.base)
	cfg := l.d.Config()
	day := func(n int) time.Time { return time.Date(2026, 11, 25+n, 2, 0, 0, 0, time.UTC) }
	entry := func(n int) *queue.Entry {
		e := queue.NewEntry(runs.ID("backup", day(n)), cfg.Job("backup"), nil, day(n), day(n), 1, runs.Schedule)
		e.Spec.Retries.Max = 3
		return e
	}
	commit := func(ops ...clientv3.Op) {
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	end := func(e *queue.Entry, o runs.Outcome, at time.Time) {
		rec := e.Finished(o, 0, 1, at, at)
		ops, _ := follow.End(l.d.Keys, cfg, l.d.Keys.Entry("backup", e.RunID), e, &rec, at)
		commit(ops...)
	}
	judgeAt := func(at time.Time) {
		clock.Advance(at.Sub(l.d.Clock.Now()))
		reload()
		if _, err := j.round(ctx); err != nil {
			t.Fatal(err)
		}
		reload()
	}
	judgeAt(day(0).Add(-time.Hour)) // the job first seen: judged from now on
	// day 0: never started. day 1: failed, retry waiting. day 2: running.
	e1 := entry(1)
	commit(clientv3.OpPut(l.d.Keys.Entry("backup", e1.RunID), e1.Encode()))
	end(e1, runs.Failed, day(1).Add(time.Minute))
	e2 := entry(2)
	commit(clientv3.OpPut(l.d.Keys.Entry("backup", e2.RunID), e2.Running("r1", 0, day(2)).Encode()))
	e3 := entry(3)
	end(e3, runs.Succeeded, day(3).Add(time.Minute))
	judgeAt(day(0).Add(3*time.Hour - time.Second))
	if n := overdueNotes(t, l, cli); len(n) != 0 {
		t.Fatalf("before 05:00: overdue %v", n)
	}
	before, err := cli.Get(ctx, l.d.Keys.Jobs(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	judgeAt(day(0).Add(3 * time.Hour))
	// Behind its own write: the view still shows the state before it.
	l.d.Overdue.Reset(before.Kvs, before.Header.Revision)
	if _, err := j.job(ctx, cfg, cfg.Job("backup")); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		judgeAt(day(n).Add(3 * time.Hour))
	}
	notes := overdueNotes(t, l, cli)
	want := map[string]string{runs.ID("backup", day(0)): overdue.NeverStarted, runs.ID("backup", day(1)): "failed",
		runs.ID("backup", day(2)): overdue.Running}
	if len(notes) != len(want) {
		t.Errorf("overdue ticks %v, want %v", notes, want)
	}
	for id, o := range want {
		if n := notes[id]; n == nil || n.Overdue == nil || n.Overdue.Outcome != o {
			t.Errorf("tick %s: notified %+v, want overdue while %s", id, n, o)
		}
	}
	lastOf := func() *overdue.Succeeded {
		last, err := j.lastSuccess(ctx, "backup")
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	if isOverdue, last := l.d.Overdue.Job("backup", lastOf()); isOverdue || !last.Equal(day(3).Add(time.Minute)) {
		t.Errorf("after day 3 succeeded: overdue %v, last success %s", isOverdue, last)
	}
	// day 4 never starts: overdue again, naming day 3's success.
	judgeAt(day(4).Add(3 * time.Hour))
	n := overdueNotes(t, l, cli)[runs.ID("backup", day(4))]
	if n == nil || n.Overdue.LastSucceededRunID != runs.ID("backup", day(3)) {
		t.Errorf("day 4: %+v, want overdue naming the last success %s", n, runs.ID("backup", day(3)))
	}
	if isOverdue, _ := l.d.Overdue.Job("backup", lastOf()); !isOverdue {
		t.Error("day 4 overdue: the job is not")
	}
	// Paused before day 5's tick: not overdue.
	commit(clientv3.OpPut(l.d.Keys.Paused("backup"), "true"))
	judgeAt(day(5).Add(3 * time.Hour))
	if n := overdueNotes(t, l, cli)[runs.ID("backup", day(5))]; n != nil {
		t.Errorf("a paused job's tick notified overdue: %+v", n)
	}
	// Still paused just before day 6's tick, resumed just after it: the
	// tick was one of the pause (never materialized), not overdue.
	judgeAt(day(6).Add(-500 * time.Millisecond))
	commit(clientv3.OpDelete(l.d.Keys.Paused("backup")))
	judgeAt(day(6).Add(3 * time.Hour))
	if n := overdueNotes(t, l, cli)[runs.ID("backup", day(6))]; n != nil {
		t.Errorf("a tick scheduled as the pause ended notified overdue: %+v", n)
	}
	// Resumed: day 7's tick never starts and is overdue.
	judgeAt(day(7).Add(3 * time.Hour))
	if n := overdueNotes(t, l, cli)[runs.ID("backup", day(7))]; n == nil || n.Overdue.Outcome != overdue.NeverStarted {
		t.Errorf("day 7 after the resume: %+v, want overdue, never started", n)
	}
	// Day 8 runs on a worker of the lean protocol: no entry, only its
	// slot says it runs.
	commit(clientv3.OpPut(l.d.Keys.Slot("backup", 0), `{"run_id":"`+runs.ID("backup", day(8))+`"}`))
	judgeAt(day(8).Add(3 * time.Hour))
	if n := overdueNotes(t, l, cli)[runs.ID("backup", day(8))]; n == nil || n.Overdue.Outcome != overdue.Running {
		t.Errorf("day 8, running with no entry: %+v, want overdue while running", n)
	}
	// A new term: the old one's judge is fenced off.
	if _, err := cli.Delete(ctx, l.term.Key); err != nil {
		t.Fatal(err)
	}
	clock.Advance(day(9).Add(3 * time.Hour).Sub(l.d.Clock.Now()))
	reload()
	if _, err := j.round(ctx); !errors.Is(err, errNotLeader) {
		t.Errorf("deposed judge: %v, want %v", err, errNotLeader)
	}
}
