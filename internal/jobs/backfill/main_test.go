package backfill

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

const testPrefix = "/sched/"

var layout = keys.New(testPrefix)

// now is the fake clock's time in every test: a Wednesday, 12:30 UTC.
var now = time.Date(2026, 11, 25, 12, 30, 0, 0, time.UTC)

// hour is hh:00 on the day of now.
func hour(hh int) time.Time { return time.Date(2026, 11, 25, hh, 0, 0, 0, time.UTC) }

type env struct {
	t   *testing.T
	cli *clientv3.Client
	b   *Backfiller
	job config.Job
}

// newEnv is an etcd, a backfiller on a fake clock at now, and an hourly
// job "report".
func newEnv(t *testing.T) *env {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	b, err := New(cli, layout, clockwork.NewFakeClockAt(now), nil)
	if err != nil {
		t.Fatal(err)
	}
	job := jobstest.WithDefaults(jobstest.Job("report", "0 * * * *"))
	return &env{t: t, cli: cli, b: b, job: job}
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *env) put(key, value string) {
	e.t.Helper()
	if _, err := e.cli.Put(e.ctx(), key, value); err != nil {
		e.t.Fatal(err)
	}
}

// cursor puts the job's cursor at t, as a leader that authorized every
// tick up to t.
func (e *env) cursor(t time.Time) { e.put(layout.Cursor(e.job.Name), queue.EncodeCursor(t)) }

// assignment puts an assignment of worker w at t naming jobs, as the lean
// protocol's leader does.
func (e *env) assignment(w string, t time.Time, jobs ...string) {
	e.t.Helper()
	a := assign.Assignment{Worker: w, At: t, Group: "g1"}
	for _, j := range jobs {
		a.Jobs = append(a.Jobs, assign.Job{Name: j, SpecRef: "ref"})
	}
	e.put(a.Key(layout), a.Encode())
}

func (e *env) run(from, to time.Time) (Result, error) {
	return e.b.Run(e.ctx(), Request{Job: &e.job, From: from, To: to})
}

// entry reads the queue entry of run id, nil if none.
func (e *env) entry(id string) *queue.Entry {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx(), layout.Entry(e.job.Name, id))
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return nil
	}
	q, err := queue.Decode(resp.Kvs[0].Value)
	if err != nil {
		e.t.Fatal(err)
	}
	return q
}

func id(t time.Time) string { return runs.ID("report", t) }

func mustSchedule(t *testing.T, e *env) schedule.Schedule {
	t.Helper()
	s, err := e.job.ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
