package assign

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"))
}

const testPrefix = "/sched/"

var layout = keys.New(testPrefix)

// instant is the tick every test assigns.
var instant = time.Date(2026, 11, 25, 17, 0, 0, 0, time.UTC)

type env struct {
	t     testing.TB
	cli   *clientv3.Client
	store *Store
	clock *clockwork.FakeClock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	clock := clockwork.NewFakeClockAt(instant.Add(-time.Second))
	s, err := New(cli, layout, clock, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cli: cli, store: s, clock: clock}
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// elect makes name the leader: its election key, and the fence on it.
func (e *env) elect(name string) clientv3.Cmp {
	e.t.Helper()
	key := layout.Election() + name
	resp, err := e.cli.Put(e.ctx(), key, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return clientv3.Compare(clientv3.CreateRevision(key), "=", resp.Header.Revision)
}

// resign deletes name's election key: its fence fails from now on.
func (e *env) resign(name string) {
	e.t.Helper()
	if _, err := e.cli.Delete(e.ctx(), layout.Election()+name); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) lease() clientv3.LeaseID {
	e.t.Helper()
	resp, err := e.cli.Grant(e.ctx(), 60)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.ID
}

func (e *env) revoke(id clientv3.LeaseID) {
	e.t.Helper()
	if _, err := e.cli.Revoke(e.ctx(), id); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) put(key, value string) {
	e.t.Helper()
	if _, err := e.cli.Put(e.ctx(), key, value); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx(), key, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// authorize writes one window for jobs, each from no cursor to instant,
// all in one assignment of worker.
func (e *env) authorize(fence clientv3.Cmp, worker string, jobs ...string) Stored {
	e.t.Helper()
	w := window(worker, jobs...)
	if _, err := e.store.Authorize(e.ctx(), fence, w); err != nil {
		e.t.Fatal(err)
	}
	return e.stored(worker)
}

// claim claims rs as chunk of the stored assignment st under lease, as a
// worker does at the instant (the clock moved to it if before): the runs
// may start on the answer. claimAhead claims before the instant.
func (e *env) claim(lease clientv3.LeaseID, st Stored, chunk int, rs ...Run) ([]Claim, error) {
	if d := instant.Sub(e.clock.Now()); d > 0 {
		e.clock.Advance(d)
	}
	return e.store.Claimer().ClaimChunk(e.ctx(), lease, st.Assignment, st.ModRevision, chunk, rs)
}

// claimAhead claims rs as chunk before the instant: its runs may start
// only after StartChunk.
func (e *env) claimAhead(lease clientv3.LeaseID, st Stored, chunk int, rs ...Run) ([]Claim, error) {
	if !e.clock.Now().Before(instant) {
		e.t.Fatalf("claimAhead at %s, not before the instant %s", e.clock.Now(), instant)
	}
	return e.store.Claimer().ClaimChunk(e.ctx(), lease, st.Assignment, st.ModRevision, chunk, rs)
}

func window(worker string, jobs ...string) Window {
	var w Window
	a := Assignment{Worker: worker, At: instant, Group: "g"}
	for _, j := range jobs {
		w.Cursors = append(w.Cursors, Cursor{Job: j, Next: instant})
		a.Jobs = append(a.Jobs, Job{Name: j, SpecRef: "ref-" + j})
	}
	w.Assignments = []Assignment{a}
	return w
}

// stored reads worker's assignment at instant.
func (e *env) stored(worker string) Stored {
	e.t.Helper()
	snap, err := e.store.Read(e.ctx(), worker)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, st := range snap.Assignments {
		if st.At.Equal(instant) && st.ModRevision != 0 {
			return st
		}
	}
	e.t.Fatalf("worker %s has no assignment at %s", worker, instant)
	return Stored{}
}

// slotsOf are the slot keys holding job's run at instant.
func (e *env) slotsOf(job string) map[string]int64 {
	e.t.Helper()
	held := map[string]int64{}
	for _, kv := range e.get(layout.JobSlots(job), clientv3.WithPrefix()).Kvs {
		var v slots.Value
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			e.t.Fatal(err)
		}
		if v.RunID == runs.ID(job, instant) {
			held[string(kv.Key)] = kv.CreateRevision
		}
	}
	return held
}

func run(job string, slot int) Run {
	return Run{Job: job, Slot: slot, StartedAt: instant}
}
