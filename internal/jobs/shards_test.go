package jobs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// shardTarget is an HTTP target that remembers, per run id, the shard
// header and body of each request, and fails a request whose input says
// "fail": true.
type shardTarget struct {
	srv *httptest.Server

	mu    sync.Mutex
	shard map[string]string // run id -> X-Scheduler-Shard
	body  map[string]string
	count map[string]int // run id and attempt -> requests
}

func startShardTarget(t *testing.T) *shardTarget {
	st := &shardTarget{shard: map[string]string{}, body: map[string]string{}, count: map[string]int{}}
	st.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := r.Header.Get("X-Scheduler-Run-Id")
		st.mu.Lock()
		st.shard[id] = r.Header.Get("X-Scheduler-Shard")
		st.body[id] = string(b)
		st.count[id+" attempt "+r.Header.Get("X-Scheduler-Attempt")]++
		st.mu.Unlock()
		if d, err := time.ParseDuration(r.URL.Query().Get("sleep")); err == nil {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			}
		}
		if strings.Contains(string(b), `"fail":true`) {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(st.srv.Close)
	return st
}

// tickOf reads the tick's fan-in record; ok is false until it is written.
func tickOf(t *testing.T, cli *clientv3.Client, job, tick string) (queue.TickRecord, bool) {
	t.Helper()
	resp, err := cli.Get(t.Context(), keys.New(testPrefix).FanIn(job, tick))
	if err != nil || len(resp.Kvs) == 0 {
		return queue.TickRecord{}, false
	}
	return queue.DecodeTick(resp.Kvs[0].Value)
}

// chainedRuns counts the runs of job queued, running or recorded whose
// upstream is tick.
func chainedRuns(t *testing.T, cli *clientv3.Client, job, tick string) int {
	t.Helper()
	k := keys.New(testPrefix)
	id := runs.ChainID(job, tick)
	resp, err := cli.Txn(t.Context()).Then(
		clientv3.OpGet(k.Entry(job, id), clientv3.WithCountOnly()),
		clientv3.OpGet(k.Record(job, id), clientv3.WithCountOnly())).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Responses[0].GetResponseRange().Count + resp.Responses[1].GetResponseRange().Count)
}

// A triggered tick of a job of 4 shards runs each shard once, each with
// its header and its item of shard_inputs over the trigger's input; the
// job chained after it runs once when every shard succeeded, and not at
// all when one failed.
func TestShardedTickChainsOnceOnItsOutcome(t *testing.T) {
	etcd := etcdtest.Start(t)
	st := startShardTarget(t)
	far := jobstest.FarTick(time.Now()) // both run only when triggered or chained
	up := jobstest.HTTPJob("split", far, st.srv.URL+"/run")
	up.Shards = 4
	up.ShardInputs = []map[string]any{{"part": "a"}, {"part": "b"}, {}, {"part": "d"}}
	down := jobstest.HTTPJob("merge", far, st.srv.URL+"/merge")
	down.After = &config.After{Job: "split", On: []string{"succeeded"}}
	cfg := jobstest.Config(up, down)
	var nodes []*node
	for _, id := range []string{"a", "b"} {
		nodes = append(nodes, startNode(t, etcd.Endpoints(), id, cfg))
	}
	n := leaderOf(t, nodes)

	tick := n.trigger(t, "split", `{"day":"mon"}`)
	poll.For(t, 60*time.Second, "the succeeded tick's chained run", func() bool { return chainedRuns(t, n.client, "merge", tick) == 1 })
	if rec, done := tickOf(t, n.client, "split", tick); !done || rec.Outcome != runs.Succeeded || rec.Shards != 4 {
		t.Errorf("tick %s: %+v (fanned in %v), want succeeded of 4", tick, rec, done)
	}
	// The tick's view (GET /api/v1/runs/{tick run id}).
	view, err := n.engine.FindRun(t.Context(), tick)
	if err != nil || view.State != "finished" || view.Outcome != runs.Succeeded || len(view.Shards) != 4 {
		t.Errorf("view of %s: %+v, %v; want finished, succeeded, 4 shards", tick, view, err)
	}
	for k, s := range view.Shards {
		if s.Shard != k || s.RunID != runs.ShardID(tick, k) || s.State != "finished" || s.Outcome != runs.Succeeded {
			t.Errorf("view of %s, shard %d: %+v", tick, k, s)
		}
	}
	st.mu.Lock()
	for k, want := range []string{`"part":"a"`, `"part":"b"`, `"day":"mon"`, `"part":"d"`} {
		id := runs.ShardID(tick, k)
		if got := st.shard[id]; got != []string{"0/4", "1/4", "2/4", "3/4"}[k] {
			t.Errorf("%s: X-Scheduler-Shard %q", id, got)
		}
		if b := st.body[id]; !strings.Contains(b, want) || !strings.Contains(b, `"day":"mon"`) {
			t.Errorf("%s: input %s, want %s over the trigger's", id, b, want)
		}
		if c := st.count[id+" attempt 1"]; c != 1 {
			t.Errorf("%s ran %d times", id, c)
		}
	}
	st.mu.Unlock()

	failing := n.trigger(t, "split", `{"day":"tue","fail":true}`)
	rec := awaitTick(t, n.client, "split", failing, 60*time.Second)
	if rec.Outcome != runs.Failed {
		t.Errorf("failing tick: outcome %s, want failed", rec.Outcome)
	}
	if c := chainedRuns(t, n.client, "merge", failing); c != 0 {
		t.Errorf("a failed tick queued %d chained runs, want none", c)
	}
	recs := records(t, n.client, "split")
	for k := range 4 {
		if r := recs[runs.ShardID(failing, k)]; r.Outcome != runs.Failed {
			t.Errorf("shard %d of the failing tick: %s, want failed", k, r.Outcome)
		}
	}
}

// shards: 1 is an unsharded job: one run under the tick's own id, its
// record under that id, no fan-in, its chain as any job's.
func TestOneShardIsUnsharded(t *testing.T) {
	etcd := etcdtest.Start(t)
	st := startShardTarget(t)
	far := jobstest.FarTick(time.Now())
	up := jobstest.HTTPJob("one", far, st.srv.URL+"/run")
	up.Shards = 1
	down := jobstest.HTTPJob("after", far, st.srv.URL+"/after")
	down.After = &config.After{Job: "one", On: []string{"succeeded"}}
	n := startNode(t, etcd.Endpoints(), "a", jobstest.Config(up, down))
	leaderOf(t, []*node{n})
	id := n.trigger(t, "one", "")
	poll.For(t, 30*time.Second, "the chained run", func() bool { return chainedRuns(t, n.client, "after", id) == 1 })
	if r, ok := records(t, n.client, "one")[id]; !ok || r.Outcome != runs.Succeeded {
		t.Errorf("record of %s: %+v (found %v), want succeeded", id, r, ok)
	}
	st.mu.Lock()
	if h, ran := st.shard[id]; !ran || h != "" {
		t.Errorf("run %s: ran %v, shard header %q; want one run, no header", id, ran, h)
	}
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if resp, err := n.client.Get(ctx, keys.New(testPrefix).FanIns(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("fan-in keys of an unsharded job: %v, %v; want none", resp, err)
	}
}

// A scheduled tick of 256 shards on three replicas, one of them crashed
// while it holds shards: its shards are recorded lost and retried on the
// others, every shard runs once per attempt, and the tick fans in once,
// after the retries, on succeeded.
func TestShardsOfACrashedReplicaAreRetriedBeforeTheFanIn(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	st := startShardTarget(t)
	up := jobstest.HTTPJob("wide", "@every 30s", st.srv.URL+"/run?sleep=2s")
	up.Shards = config.MaxShards
	up.Retries.Max = 1
	down := jobstest.HTTPJob("after", jobstest.FarTick(time.Now()), st.srv.URL+"/after")
	down.After = &config.After{Job: "wide", On: []string{"succeeded"}}
	cfg := jobstest.WideConfig(up, down)
	byID := map[string]*node{}
	var list []*node
	for _, id := range []string{"a", "b", "c"} {
		n := startNode(t, etcd.Endpoints(), id, cfg)
		byID[id] = n
		list = append(list, n)
	}
	leader := leaderOf(t, list)

	var tick string
	var victim *node
	poll.For(t, 90*time.Second, "shards of a tick running on a replica that does not lead", func() bool {
		for _, s := range leader.held(t) {
			if s.Job == "wide" && s.Holder != leader.id {
				tick, _, _ = runs.ShardOf(s.RunID)
				victim = byID[s.Holder]
				return true
			}
		}
		return false
	})
	victim.crash()

	rec := awaitTick(t, leader.client, "wide", tick, 120*time.Second)
	if rec.Outcome != runs.Succeeded || rec.Shards != config.MaxShards {
		t.Errorf("tick %s: %+v, want succeeded of %d shards", tick, rec, config.MaxShards)
	}
	recs := records(t, leader.client, "wide")
	lost := 0
	for k := range config.MaxShards {
		id := runs.ShardID(tick, k)
		r, ok := recs[id]
		if !ok || r.Outcome != runs.Succeeded {
			t.Errorf("%s: record %v (found %v), want succeeded", id, r.Outcome, ok)
			continue
		}
		if len(r.Previous) > 0 && r.Previous[0].Outcome == runs.Lost {
			lost++
		}
	}
	// The fan-in is the last write of the tick: no shard's record after it.
	k := keys.New(testPrefix)
	resp, err := leader.client.Txn(t.Context()).Then(
		clientv3.OpGet(k.FanIn("wide", tick)),
		clientv3.OpGet(k.Record("wide", tick+"#"), clientv3.WithPrefix(), clientv3.WithMaxModRev(0), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		t.Fatal(err)
	}
	fanIn := resp.Responses[0].GetResponseRange().Kvs[0].ModRevision
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if kv.ModRevision > fanIn {
			t.Errorf("%s recorded at revision %d, after the tick's fan-in at %d", kv.Key, kv.ModRevision, fanIn)
		}
	}
	if lost == 0 {
		t.Errorf("no shard of %s was lost with replica %s and retried", tick, victim.id)
	}
	st.mu.Lock()
	for run, c := range st.count {
		if c > 1 {
			t.Errorf("%s reached the target %d times", run, c)
		}
	}
	st.mu.Unlock()
	poll.For(t, 30*time.Second, "the chained run", func() bool { return chainedRuns(t, leader.client, "after", tick) == 1 })
	t.Logf("tick %s: %d shards lost with replica %s and retried", tick, lost, victim.id)
}

// A leader that died between the parts of a tick's fan-out left its first
// part, and one shard of it already ended: the next leader writes the
// tick again, and only the shards missing are queued; the ended shard does
// not run again, every other runs once, and the tick fans in once. The
// same when the ended shard's record was pruned since (a tick of more
// shards than history_limit): its part was applied, which its other
// shards show, so it is not written again (its guard, no entry and no
// record, alone would let it).
func TestShardedTickRedoneAfterAPartialWrite(t *testing.T) {
	t.Parallel()
	for _, pruned := range []bool{false, true} {
		t.Run(fmt.Sprintf("record pruned %v", pruned), func(t *testing.T) { redoAfterAPartialWrite(t, pruned) })
	}
}

func redoAfterAPartialWrite(t *testing.T, pruned bool) {
	etcd := etcdtest.Start(t)
	st := startShardTarget(t)
	job := jobstest.HTTPJob("redo", "@every 10s", st.srv.URL+"/run?sleep=50ms")
	job.Shards = 2*queue.ShardPart + 2 // three parts
	cfg := jobstest.WideConfig(job)
	cfg.Cluster.Etcd.Prefix = testPrefix
	k := keys.New(testPrefix)
	cli := etcdtest.NewClient(t, etcd.Endpoints())

	// The tick at least 5s ahead, so no leader has written it yet.
	at := time.Now().Add(5 * time.Second).Truncate(10 * time.Second).Add(10 * time.Second)
	tick := queue.NewEntry(runs.ID("redo", at), cfg.Job("redo"), cfg.Resources, at, at, 1, runs.Schedule)
	shards := tick.ShardEntries()
	parts := queue.FanOutParts(k, shards)
	if _, err := cli.Txn(t.Context()).Then(parts[0]...).Commit(); err != nil {
		t.Fatal(err)
	}
	rec := shards[0].Finished(runs.Succeeded, 0, 1, at, at)
	ops, _ := follow.End(k, cfg, k.Entry("redo", shards[0].RunID), shards[0], &rec, at)
	if _, err := cli.Txn(t.Context()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	if pruned {
		if _, err := cli.Delete(t.Context(), k.Record("redo", shards[0].RunID)); err != nil {
			t.Fatal(err)
		}
	}

	n := startNode(t, etcd.Endpoints(), "a", cfg)
	leaderOf(t, []*node{n})
	done := awaitTick(t, cli, "redo", tick.RunID, 2*time.Minute)
	if done.Outcome != runs.Succeeded {
		t.Errorf("tick %s: %+v, want succeeded", tick.RunID, done)
	}
	st.mu.Lock()
	for i, s := range shards {
		want := 1
		if i == 0 {
			want = 0 // it ended before the redo
		}
		if c := st.count[s.RunID+" attempt 1"]; c != want {
			t.Errorf("%s reached the target %d times, want %d", s.RunID, c, want)
		}
	}
	st.mu.Unlock()
	resp, err := cli.Get(t.Context(), k.FanIn("redo", tick.RunID))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != int64(job.Shards)+1 {
		t.Errorf("fan-in key %v, %v; want version %d (authorized once, %d final ends)", resp, err, job.Shards+1, job.Shards)
	}
}
