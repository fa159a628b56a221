package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/target"
)

type noSessions struct{}

func (noSessions) Current(context.Context) (*session.Session, error) {
	return nil, errors.New("no session in this test")
}

type noExecutor struct{}

func (noExecutor) Execute(context.Context, *config.Job, target.Run) target.Result {
	return target.Result{}
}

var depsJob = jobstest.WithDefaults(jobstest.Job("a", "@every 1s"))

// validDeps are settings New accepts; its queue view holds one pending run
// due at due.
func validDeps(t *testing.T, due time.Time) Deps {
	t.Helper()
	layout := keys.New("/deps/")
	view, _ := aheadView(t, layout, &depsJob, due)
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := jobstest.Config(depsJob)
	return Deps{Client: &clientv3.Client{}, Keys: layout, ID: "w1", Sessions: noSessions{}, Slots: roomSlots{room: 1},
		Executor: noExecutor{}, Queue: view, Specs: queue.NewSpecs(layout, nil, nil), Config: func() *config.Config { return cfg }, Metrics: m,
		Clock: clockwork.NewRealClock(), Log: slog.New(slog.DiscardHandler)}
}

// New refuses settings a worker cannot work with, naming each.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Deps)
		want   []string
	}{
		{"no client", func(d *Deps) { d.Client = nil }, []string{"worker: Client is required: the etcd client its queue writes go through"}},
		{"no key layout", func(d *Deps) { d.Keys = keys.Layout{} }, []string{"worker: Keys is required: the layout of the cluster's keys"}},
		{"no sessions", func(d *Deps) { d.Sessions = nil }, []string{"worker: Sessions is required"}},
		{"no slots", func(d *Deps) { d.Slots = nil }, []string{"worker: Slots is required"}},
		{"no executor", func(d *Deps) { d.Executor = nil }, []string{"worker: Executor is required: what runs the targets"}},
		{"no queue view", func(d *Deps) { d.Queue = nil }, []string{"worker: Queue is required: the view of queued runs"}},
		{"no specs", func(d *Deps) { d.Specs = nil }, []string{"worker: Specs is required"}},
		{"no config", func(d *Deps) { d.Config = nil }, []string{"worker: Config is required"}},
		{"no metrics", func(d *Deps) { d.Metrics = nil }, []string{"worker: Metrics is required"}},
		{"no id", func(d *Deps) { d.ID = "" }, []string{"worker: ID is required"}},
		{"id with a slash", func(d *Deps) { d.ID = "a/b" }, []string{`worker: ID "a/b" must not contain "/"`}},
		{"negative claim lead", func(d *Deps) { d.ClaimLead = -time.Millisecond }, []string{"worker: ClaimLead must not be negative, got -1ms"}},
		{"negative backup", func(d *Deps) { d.Backup = -time.Second }, []string{"worker: Backup must not be negative, got -1s"}},
		{"every problem at once", func(d *Deps) { d.Queue, d.Backup = nil, -time.Second },
			[]string{"worker: Queue is required", "worker: Backup must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDeps(t, time.Now())
			tc.change(&d)
			w, err := New(d)
			if err == nil || w != nil {
				t.Fatalf("New = %v, %v; want an error", w, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New: %v\nwant it to say %q", err, want)
				}
			}
		})
	}
	w, err := New(validDeps(t, time.Now()))
	if err != nil {
		t.Fatalf("New with every setting = %v", err)
	}
	if w.d.ClaimLead != DefaultClaimLead || w.d.Backup != DefaultBackup || w.d.Clock == nil || w.d.Log == nil {
		t.Errorf("defaults not filled: %+v", w.d)
	}
}

// New does not subscribe to the queue: a run put before Run is not in
// the worker's heap. Run's start (follow) takes the runs the view already
// holds and every put after.
func TestRunFollowsTheQueueFromItsStart(t *testing.T) {
	due := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	d := validDeps(t, due)
	w, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	put := func(at time.Time, rev int64) {
		e := queue.NewEntry(runs.ID(depsJob.Name, at), &depsJob, nil, at, at, 1, runs.Schedule)
		kv := &mvccpb.KeyValue{Key: []byte(d.Keys.Entry(depsJob.Name, e.RunID)), Value: []byte(e.Encode()), ModRevision: rev}
		d.Queue.Apply([]*clientv3.Event{{Type: mvccpb.PUT, Kv: kv}}, rev)
	}
	put(due.Add(time.Second), 10)
	if n := len(w.queue.pending); n != 0 {
		t.Fatalf("after New and a put, the worker holds %d pending runs, want 0: it subscribed in its constructor", n)
	}
	w.queue.follow()
	if n := len(w.queue.pending); n != 2 {
		t.Fatalf("after follow, the worker holds %d pending runs, want the view's 2", n)
	}
	put(due.Add(2*time.Second), 11)
	if n := len(w.queue.pending); n != 3 {
		t.Fatalf("after follow and a put, the worker holds %d pending runs, want 3", n)
	}
}
