package leader

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// resolveEnv is a leader whose members' view is mirrored from etcd.
type resolveEnv struct {
	t      *testing.T
	cli    *clientv3.Client
	layout keys.Layout
	cfg    *config.Config
	l      *leader
	clock  *clockwork.FakeClock
	ctx    context.Context
}

func newResolveEnv(t *testing.T, prefix string) *resolveEnv {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	cfg := jobstest.Config(
		jobstest.Job("claimed", "@every 1m"),
		jobstest.Job("moved", "@every 1m"),
		jobstest.Job("other", "@every 1m"),
	)
	for i := range cfg.Jobs {
		cfg.Jobs[i].Retries.Max = 1
	}
	clock := clockwork.NewFakeClockAt(leanStart)
	l := newTestLeader(t, cli, prefix, cfg, clock)
	l.d.Workers = NewWorkers(l.d.Keys)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = mirror.Run(ctx, cli, l.d.Keys.Members(), l.d.Workers, nil)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &resolveEnv{t: t, cli: cli, layout: l.d.Keys, cfg: cfg, l: l, clock: clock, ctx: ctx}
}

// background runs f while the test lasts; the test's cleanup waits for
// it (t.Context(), and so e.ctx, ends before the cleanups).
func (e *resolveEnv) background(f func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
	e.t.Cleanup(wg.Wait)
}

// resolveDead is the leader's resolution of dead workers, failing the test
// on an error.
func (e *resolveEnv) resolveDead() {
	if err := e.l.resolver.Run(e.ctx); err != nil {
		e.t.Errorf("resolveDead: %v", err)
	}
}

// member registers replica id on a new lease, as a replica's session does,
// and returns its incarnation and lease.
func (e *resolveEnv) member(id string) (string, clientv3.LeaseID) {
	e.t.Helper()
	lease, err := e.cli.Grant(e.ctx, 60)
	if err != nil {
		e.t.Fatal(err)
	}
	v := fmt.Sprintf(`{"id":%q,"protocol":%d}`, id, assign.Protocol)
	if _, err := e.cli.Put(e.ctx, e.layout.Member(id), v, clientv3.WithLease(lease.ID)); err != nil {
		e.t.Fatal(err)
	}
	w := keys.Incarnation(id, int64(lease.ID))
	poll.For(e.t, 10*time.Second, "the members' view lists "+w, func() bool { return e.l.d.Workers.Alive(w) })
	return w, lease.ID
}

// assign stores worker's assignment of jobs at at, as the leader wrote it,
// and a claim marker naming claimed.
func (e *resolveEnv) assign(worker string, at time.Time, jobs []string, claimed ...string) string {
	e.t.Helper()
	a := assign.Assignment{Worker: worker, At: at, Group: jobs[0]}
	for _, name := range jobs {
		j := &e.cfg.Jobs[indexOf(e.cfg, name)]
		a.Jobs = append(a.Jobs, assign.Job{Name: name, SpecRef: queue.NewEntry(a.RunID(name), j, e.cfg.Resources, at, at, 1, runs.Schedule).SpecRef})
	}
	ops := []clientv3.Op{clientv3.OpPut(a.Key(e.layout), a.Encode())}
	if len(claimed) > 0 {
		marker, _ := json.Marshal(claimed) // strings only
		ops = append(ops, clientv3.OpPut(e.layout.ClaimMarker(worker, at, a.Group, 0), string(marker)))
	}
	if _, err := e.cli.Txn(e.ctx).Then(ops...).Commit(); err != nil {
		e.t.Fatal(err)
	}
	return a.Key(e.layout)
}

func indexOf(cfg *config.Config, job string) int {
	for i := range cfg.Jobs {
		if cfg.Jobs[i].Name == job {
			return i
		}
	}
	panic("no job " + job)
}

// get is the value at key, "" when absent.
func (e *resolveEnv) get(key string) string {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// A worker that dies (its member key goes with its lease) leaves an
// assignment: its claimed run is recorded lost and, with a retry left,
// queued again as attempt 2; its unclaimed run, still within its starting
// deadline, moves to the live worker. The leader does it on the members'
// change, without any tick of its clock.
func TestADeadWorkersRunsAreLostOrMoved(t *testing.T) {
	e := newResolveEnv(t, "/dead/")
	live, _ := e.member("r1")
	dead, deadLease := e.member("r2")
	at := leanStart.Add(10 * time.Second)
	old := e.assign(dead, at, []string{"claimed", "moved"}, "claimed")

	e.background(e.resolveDead)
	// The term's first look found the worker alive (its timer is made
	// after it); the fake clock never moves, so only the members' change
	// can resolve the worker from here.
	if err := e.clock.BlockUntilContext(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	if e.get(old) == "" {
		t.Fatal("a live worker's assignment was resolved")
	}
	if _, err := e.cli.Revoke(e.ctx, deadLease); err != nil {
		t.Fatal(err)
	}

	lost, moved := runs.ID("claimed", at), runs.ID("moved", at)
	poll.Until(t, 20*time.Second, "the dead worker's runs resolved", func() (bool, string) {
		if e.get(old) != "" {
			return false, "its assignment is still there"
		}
		return true, ""
	})
	rec, err := runs.DecodeRecord([]byte(e.get(e.layout.Record("claimed", lost))))
	if err != nil || rec.Outcome != runs.Lost {
		t.Errorf("claimed run's record: %+v (%v), want lost", rec, err)
	}
	retry, err := queue.Decode([]byte(e.get(e.layout.Entry("claimed", lost))))
	if err != nil || retry.Attempt != 2 {
		t.Errorf("claimed run's retry entry: %+v (%v), want attempt 2", retry, err)
	} else if e.get(retry.SpecKey(e.layout)) == "" {
		t.Errorf("the retry entry's spec %s is not stored", retry.SpecKey(e.layout))
	}
	if got := e.get(e.layout.Record("moved", moved)); got != "" {
		t.Errorf("unclaimed run recorded %s, want it moved", got)
	}
	if got := assignedRuns(t, e.cli, e.layout)[moved]; got != live {
		t.Errorf("unclaimed run assigned to %q, want the live worker %s", got, live)
	}
	if got := stored(t, e.cli, e.layout.WorkerClaimed(dead)); len(got) != 0 {
		t.Errorf("the dead worker's claim markers are left: %v", got)
	}
}

// A replica that re-registered on a new session is a new worker: its old
// incarnation, whose member key exists but on another lease, is resolved
// (its unclaimed run moves to the new one), and the new incarnation's
// assignment is left alone. The members' view signals the lease change.
func TestAnIncarnationOnAnOldLeaseIsResolvedAndTheLiveOneIsNot(t *testing.T) {
	e := newResolveEnv(t, "/reborn/")
	old, _ := e.member("r1")
	at := leanStart.Add(10 * time.Second)
	oldKey := e.assign(old, at, []string{"moved"})
	if err := e.l.resolver.once(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.get(oldKey) == "" {
		t.Fatalf("a live incarnation's assignment was resolved")
	}
	select {
	case <-e.l.d.Workers.Changed(): // the mirror's first read
	default:
	}

	reborn, _ := e.member("r1") // the same replica on a new lease
	newKey := e.assign(reborn, at, []string{"other"})
	poll.For(t, 10*time.Second, "the members' view signals the old incarnation's end", func() bool {
		select {
		case <-e.l.d.Workers.Changed():
			return true
		default:
			return false
		}
	})
	newRev := modRevision(t, e.cli, newKey)
	if err := e.l.resolver.once(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.get(oldKey) != "" {
		t.Errorf("the old incarnation's assignment is left")
	}
	if got := assignedRuns(t, e.cli, e.layout)[runs.ID("moved", at)]; got != reborn {
		t.Errorf("the old incarnation's run assigned to %q, want %s", got, reborn)
	}
	if got := modRevision(t, e.cli, newKey); got != newRev {
		t.Errorf("the live incarnation's assignment changed (mod revision %d, was %d)", got, newRev)
	}
}

func modRevision(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("%s: %v, %d keys", key, err, len(resp.Kvs))
	}
	return resp.Kvs[0].ModRevision
}

// At the start of a term the members may not be read yet: every worker
// would look dead and none could take a dead one's runs, which would be
// recorded missed. The resolution waits for the members' first read.
func TestResolutionWaitsForTheMembersFirstRead(t *testing.T) {
	e := newResolveEnv(t, "/first/")
	live, _ := e.member("r1")
	at := leanStart.Add(10 * time.Second)
	e.assign("r2.1", at, []string{"moved"}) // an incarnation whose member key is gone
	e.l.d.Workers = NewWorkers(e.layout)    // a term started before its mirror's first read

	e.background(e.resolveDead)
	moved := runs.ID("moved", at)
	if poll.Within(time.Second, func() bool { return e.get(e.layout.Record("moved", moved)) != "" }) {
		t.Fatalf("resolved before the members were read: %s", e.get(e.layout.Record("moved", moved)))
	}
	e.background(func() { _ = mirror.Run(e.ctx, e.cli, e.layout.Members(), e.l.d.Workers, nil) })
	poll.Until(t, 20*time.Second, "the run moved to the live worker", func() (bool, string) {
		if w := assignedRuns(t, e.cli, e.layout)[moved]; w != live {
			return false, fmt.Sprintf("assigned to %q", w)
		}
		return true, ""
	})
}
