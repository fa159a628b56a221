package jobs_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// overdueJob is j with overdue_after d.
func overdueJob(j config.Job, d time.Duration) config.Job {
	j.OverdueAfter = config.Duration(d)
	return j
}

// overdueByTick is the "overdue" notifications r got, by tick, each
// delivery of each.
func (r *receiver) overdueByTick(job string) map[string][]delivery {
	out := map[string][]delivery{}
	for _, d := range r.deliveries(true) {
		if d.Event == config.Overdue && d.Record.Job == job {
			out[d.Record.RunID] = append(out[d.Record.RunID], d)
		}
	}
	return out
}

// overdueOutcomes is what the overdue notifications of job said, by tick.
func (r *receiver) overdueOutcomes(job string) map[string]string {
	out := map[string]string{}
	for id, ds := range r.overdueByTick(job) {
		if ds[0].Overdue != nil {
			out[id] = ds[0].Overdue.Outcome
		}
	}
	return out
}

// awaitOverdue waits until a tick of job was notified overdue with
// outcome, and returns that tick.
func awaitOverdue(t *testing.T, r *receiver, job, outcome string) string {
	t.Helper()
	var tick string
	poll.Until(t, 60*time.Second, fmt.Sprintf("a tick of %s overdue while %s", job, outcome), func() (bool, string) {
		got := r.overdueOutcomes(job)
		for id, o := range got {
			if o == outcome {
				tick = id
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	return tick
}

// A tick not succeeded overdue_after past its scheduled time is notified
// overdue once, naming what it is so far: failed with retries left (the
// retry waits out its backoff), still running, waiting for the slot a
// long run holds, or missed its starting deadline behind it. The
// notification carries the job's last success, none here.
func TestOverdueForEachWayATickFailsToSucceed(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	flaky := overdueJob(httpJob("flaky", "@every 2s", w.url("status=500")), 1500*time.Millisecond)
	flaky.Retries = config.Retries{Max: 5, Backoff: config.Duration(time.Minute), MaxBackoff: config.Duration(time.Minute)}
	// Every tick of long starts at once and is still running when due
	// (a tick that waited behind another first is queued then, and the
	// judge's first tick may come after the first run started).
	long := overdueJob(httpJob("long", "@every 2s", w.url("sleep=8s")), 1500*time.Millisecond)
	long.MaxConcurrency = 8
	waits := long
	waits.Name, waits.MaxConcurrency = "waits", 1
	waits.Overlap, waits.QueueLimit = config.OverlapQueue, 3
	missing := waits
	missing.Name = "missing"
	missing.StartingDeadline = config.Duration(300 * time.Millisecond)
	cfg := newConfig(flaky, long, waits, missing)
	rcv.notifies(cfg, config.Overdue)
	etcd.leading("solo", cfg)

	tick := awaitOverdue(t, rcv, "flaky", string(runs.Failed))
	awaitOverdue(t, rcv, "long", "running")
	awaitOverdue(t, rcv, "waits", "queued")
	awaitOverdue(t, rcv, "missing", string(runs.Missed))
	d := rcv.overdueByTick("flaky")[tick][0]
	if at, ok := runs.ScheduledAtOf(tick); !ok || !d.Overdue.DueAt.Equal(at.Add(1500*time.Millisecond)) || d.Overdue.LastSucceededRunID != "" {
		t.Errorf("overdue of %s says %+v: want due 1.5s after the tick, no success known", tick, d.Overdue)
	}
	for _, job := range []string{"flaky", "long", "waits", "missing"} {
		for id, ds := range rcv.overdueByTick(job) {
			if ids := distinctIDs(ds); ids != 1 {
				t.Errorf("tick %s notified overdue under %d ids, want one", id, ids)
			}
		}
	}
}

// The ticks of a paused job and excluded ticks are never overdue, while
// a job beside them that fails is, tick after tick.
func TestOverdueNeverForPausedOrExcludedTicks(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	failing := overdueJob(httpJob("failing", "@every 1s", w.url("status=500")), 500*time.Millisecond)
	paused := overdueJob(httpJob("paused", "@every 1s", w.url("status=500")), 500*time.Millisecond)
	paused.Paused = true
	excluded := overdueJob(httpJob("excluded", "@every 1s", w.url("status=500")), 500*time.Millisecond)
	now := time.Now().UTC()
	excluded.Exclude = []config.Exclude{{From: now.Add(-time.Minute).Format(time.RFC3339), To: now.Add(time.Hour).Format(time.RFC3339)}}
	cfg := newConfig(failing, paused, excluded)
	rcv.notifies(cfg, config.Overdue)
	etcd.leading("solo", cfg)
	poll.Until(t, 60*time.Second, "five ticks of the failing job overdue", func() (bool, string) {
		got := len(rcv.overdueByTick("failing"))
		return got >= 5, fmt.Sprint(got)
	})
	for _, job := range []string{"paused", "excluded"} {
		if got := rcv.overdueByTick(job); len(got) > 0 {
			t.Errorf("job %s: ticks notified overdue: %v", job, slices.Collect(maps.Keys(got)))
		}
	}
}

// overdueState reads job's overdue state from etcd.
func overdueState(t *testing.T, cli *clientv3.Client, job string) overdue.State {
	t.Helper()
	resp, err := cli.Get(t.Context(), keys.New(testPrefix).Overdue(job))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return overdue.State{}
	}
	s, _ := overdue.Decode[overdue.State](resp.Kvs[0].Value)
	return s
}

// Exactly one overdue notification per overdue tick, none lost: across a
// leader killed the moment the first tick was found overdue (before its
// notification was delivered), and across a stop and start of every
// replica. The job fails every tick, so every tick from the first
// notified to the last is overdue.
func TestOverdueOnceAcrossLeaderChangeAndRestart(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	job := overdueJob(httpJob("nightly", "@every 1s", w.url("status=500")), time.Second)
	cfg := newConfig(job)
	rcv.notifies(cfg, config.Overdue)
	puts := watchPuts(t, etcd.Client(), keys.New(testPrefix).Outbox())
	nodes := etcd.nodes(cfg, "a", "b")
	first := leaderOf(t, nodes)
	poll.For(t, 60*time.Second, "a first tick found overdue", func() bool {
		return overdueState(t, first.client, "nightly").Tick != nil
	})
	first.crash()
	killedAt := overdueState(t, etcd.Client(), "nightly").Through
	leaderOf(t, nodes)
	poll.For(t, 60*time.Second, "ticks judged by the second leader", func() bool {
		return overdueState(t, etcd.Client(), "nightly").Through.After(killedAt.Add(3 * time.Second))
	})
	for _, n := range nodes {
		n.stop(5 * time.Second)
	}
	stoppedAt := overdueState(t, etcd.Client(), "nightly").Through
	etcd.nodes(cfg, "c", "d")
	poll.For(t, 60*time.Second, "ticks judged after the restart", func() bool {
		return overdueState(t, etcd.Client(), "nightly").Through.After(stoppedAt.Add(3 * time.Second))
	})
	last := overdueState(t, etcd.Client(), "nightly").Through
	poll.Until(t, 60*time.Second, "every overdue tick delivered", func() (bool, string) {
		got := rcv.overdueByTick("nightly")
		for at := killedAt; !at.After(last); at = at.Add(time.Second) {
			if len(got[runs.ID("nightly", at)]) == 0 {
				return false, "not yet " + runs.ID("nightly", at)
			}
		}
		return outbox(t, etcd.Client()) == 0, "outbox not empty"
	})
	// Delivery is at least once (a leader killed between a POST and its
	// delete sends it again, under the same id); the write is once.
	for tick, ds := range rcv.overdueByTick("nightly") {
		if ids := distinctIDs(ds); ids != 1 {
			t.Errorf("tick %s notified overdue under %d ids, want one", tick, ids)
		}
	}
	for key, n := range puts() {
		if n != 1 {
			t.Errorf("%s written %d times, want once", key, n)
		}
	}
}

// watchPuts counts the puts of each key under prefix from now until the
// test reads them (the returned func), through an etcd watch.
func watchPuts(t *testing.T, cli *clientv3.Client, prefix string) func() map[string]int {
	ctx, cancel := context.WithCancel(t.Context())
	ch := cli.Watch(ctx, prefix, clientv3.WithPrefix())
	var mu sync.Mutex
	counts := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for resp := range ch {
			mu.Lock()
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					counts[string(ev.Kv.Key)]++
				}
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() map[string]int {
		// A last put to read: the watch has delivered everything before it.
		mark := prefix + "~mark"
		if _, err := cli.Put(t.Context(), mark, ""); err != nil {
			t.Fatal(err)
		}
		poll.For(t, 30*time.Second, "the watch at the mark", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return counts[mark] > 0
		})
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(counts)
		delete(out, mark)
		return out
	}
}

// A sharded tick needs every shard: one shard failed makes the tick
// overdue, with the failed shard's outcome, while its other shard
// succeeded.
func TestOverdueForAShardedTickWithOneShardFailed(t *testing.T) {
	etcd := startEtcd(t)
	rcv := startReceiver(t, http.StatusOK)
	target := failingTarget(t, func(r *http.Request) bool { return r.Header.Get("X-Scheduler-Shard") == "1/2" })
	split := overdueJob(httpJob("split", "@every 2s", target), 1500*time.Millisecond)
	split.Shards = 2
	cfg := newConfig(split)
	rcv.notifies(cfg, config.Overdue)
	n := etcd.leading("solo", cfg)
	tick := awaitOverdue(t, rcv, "split", string(runs.Failed))
	recs := records(t, n.client, "split")
	if a, b := recs[runs.ShardID(tick, 0)], recs[runs.ShardID(tick, 1)]; a.Outcome != runs.Succeeded || b.Outcome != runs.Failed {
		t.Errorf("shards of overdue tick %s: %s and %s, want succeeded and failed", tick, a.Outcome, b.Outcome)
	}
}

// A run lost with its replica (killed while the run went on) leaves its
// tick overdue, as lost.
func TestOverdueForARunLostWithItsReplica(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	rcv := startReceiver(t, http.StatusOK)
	victim := overdueJob(httpJob("victim", "@every 30s", w.url("sleep=60s")), 15*time.Second)
	cfg := newConfig(victim)
	rcv.notifies(cfg, config.Overdue)
	nodes := etcd.nodes(cfg, "a", "b")
	var tick, holder string
	poll.Until(t, 60*time.Second, "a tick of victim running", func() (bool, string) {
		w.mu.Lock()
		for id, by := range w.reached {
			if runs.JobOf(id) == "victim" {
				tick, holder = id, by
			}
		}
		w.mu.Unlock()
		return tick != "", ""
	})
	crashed := false
	for _, n := range nodes {
		if n.id == holder {
			n.crash()
			crashed = true
		}
	}
	if !crashed {
		t.Fatalf("tick %s held by %q, none of the replicas", tick, holder)
	}
	awaitRecord(t, etcd.Client(), "victim", tick, func(r runs.Record) bool { return r.Outcome == runs.Lost })
	poll.Until(t, 90*time.Second, "the lost tick overdue", func() (bool, string) {
		got := rcv.overdueOutcomes("victim")
		return got[tick] == string(runs.Lost), fmt.Sprint(got)
	})
}

// distinctIDs counts the notification ids among ds: a repeated delivery
// (at least once) keeps its id.
func distinctIDs(ds []delivery) int {
	ids := map[string]bool{}
	for _, d := range ds {
		ids[d.ID] = true
	}
	return len(ids)
}
