package jobs_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The two run paths decide every tick alike: one seeded random workload
// (every admission setting, each overlap policy, catch-up, jitter, a
// pause, retries, shards, a chain, a trigger and a backfill) runs on two
// clusters from the same second: one where the leader assigns what the
// lean path can take, one with a member of the protocol before it, where
// every tick is queued (docs/protocol.md, mixed versions). Every tick in
// the window compared has the same outcome on both, and so have the
// triggered, backfilled and chained runs.
//
// What depends on timing, and is compared otherwise:
//   - which ticks a max_runs job spends its runs on depends on when each
//     cluster's leader wrote its first window: their number is compared;
//   - targets hold until half a second past the Nth second after their
//     scheduled time (hold=N), so a run that starts late (a queue path
//     backup's turn, a loaded machine: a run started over a second late
//     once shifted a job's alternation of runs and skips by a tick) ends
//     when it would have, and no decision sits within 500ms of a run's end;
//     the rate window is a second from either edge for the same reason.
//
// Set DIFF_SEED to replay a failure; the seed is printed on failure.
func TestBothRunPathsDecideEveryTickAlike(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("DIFF_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with DIFF_SEED=%d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	lean, queued := startWitness(t), startWitness(t)
	leanEtcd, queuedEtcd := startEtcd(t), startEtcd(t)
	oldMember(t, queuedEtcd.Client())
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	<-time.After(time.Until(start)) // both clusters from the same second
	// Every job's first tick is at start+3s on both: what a run decides
	// depends on the runs before it (a window's places, a slot held), and
	// those start together.
	first := start.Add(3 * time.Second)
	a := leanEtcd.leading("lean", differentialWorkload(rng, lean.url, first))
	b := queuedEtcd.leading("queued", differentialWorkload(rand.New(rand.NewPCG(seed, seed>>1)), queued.url, first))

	from := start.Add(5 * time.Second)
	to := from.Add(8 * time.Second)
	<-time.After(time.Until(from))
	if la, lb := assignments(t, a), assignments(t, b); la == 0 || lb != 0 {
		t.Fatalf("assignments: %d on the lean path's cluster, %d on the queue path's; want some and none", la, lb)
	}
	for _, n := range []*node{a, b} {
		n.trigger(t, "manual", "")
		if _, err := n.engine.Backfill(t.Context(), "backfilled", start.Add(-6*time.Second), start.Add(-2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	<-time.After(time.Until(to.Add(4 * time.Second))) // the window's runs end by then (hold=2)
	got := [2]map[string]string{decisions(t, a, from, to), decisions(t, b, from, to)}
	for _, id := range unionKeys(got[0], got[1]) {
		if got[0][id] != got[1][id] {
			failLogOf(t).errorf("%s: lean path %q, queue path %q", id, got[0][id], got[1][id])
		}
	}
	if len(got[0]) < 40 {
		failLogOf(t).errorf("only %d runs compared: the workload did not run", len(got[0]))
	}
	t.Logf("seed %d: %d runs compared", seed, len(got[0]))
}

// assignments counts the assignments stored in n's cluster.
func assignments(t *testing.T, n *node) int64 {
	t.Helper()
	resp, err := n.client.Get(t.Context(), keys.New(testPrefix).Assignments(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// oldMember puts the member key of a replica of the protocol before the
// lean one: while it is a member, the leader queues every tick.
func oldMember(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	lease, err := cli.Grant(t.Context(), 300)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(t.Context(), keys.New(testPrefix).Member("old"), `{"id":"old","protocol":1}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
}

// differentialWorkload is one job of each kind, in an order and with
// settings rng picks, targets at url.
func differentialWorkload(rng *rand.Rand, url func(string) string, first time.Time) *config.Config {
	kinds := []func(j *config.Job, cfg *config.Config){
		func(j *config.Job, _ *config.Config) { j.HTTP.URL = url(fmt.Sprintf("sleep=%dms", 100*rng.IntN(3))) },
		func(j *config.Job, _ *config.Config) { j.HTTP.URL = url("hold=2") }, // overlap skip
		func(j *config.Job, _ *config.Config) { j.HTTP.URL, j.Overlap = url("hold=2"), config.OverlapQueue },
		func(j *config.Job, _ *config.Config) { j.HTTP.URL, j.ConcurrencyKey = url("hold=2"), "k" },
		func(j *config.Job, cfg *config.Config) {
			cfg.Resources = append(cfg.Resources, config.Resource{Name: "r-" + j.Name, Limit: 1})
			j.HTTP.URL, j.Resources, j.MaxConcurrency = url("hold=2"), []string{"r-" + j.Name}, 2
		},
		func(j *config.Job, _ *config.Config) {
			// Every 2s, one place per 3s: every other tick, a second from
			// either edge of the window (a queue path backup's turn moves a
			// start by 250ms).
			j.Schedule = "@every 2s"
			j.Rate, j.MaxConcurrency = &config.Rate{Count: 1, Per: config.Duration(3 * time.Second)}, 2
		},
		func(j *config.Job, _ *config.Config) { j.HTTP.URL, j.Retries.Max = url("status=500"), 1 },
		func(j *config.Job, _ *config.Config) {
			j.Retries.HoldSlot, j.Retries.Max, j.HTTP.URL = true, 1, url("status=500")
		},
		func(j *config.Job, _ *config.Config) { j.Shards = 2 + rng.IntN(2) },
		func(j *config.Job, _ *config.Config) { j.Paused = true },
		func(j *config.Job, _ *config.Config) { j.Jitter = config.Duration(300 * time.Millisecond) },
		func(j *config.Job, _ *config.Config) { j.CatchUp = config.CatchUpAll },
		func(j *config.Job, _ *config.Config) { j.Overlap, j.HTTP.URL = config.OverlapReplace, url("hold=2") },
	}
	cfg := newConfig()
	var jobs []config.Job
	for i, k := range rng.Perm(len(kinds)) {
		j := httpJob(fmt.Sprintf("k%02d-%d", k, i), "@every 1s", url(""))
		kinds[k](&j, cfg)
		jobs = append(jobs, j)
	}
	capped := httpJob("capped", "@every 1s", url(""))
	capped.MaxRuns = 3
	manual := httpJob("manual", "@manually", url(""))
	backfilled := httpJob("backfilled", "@every 1s", url(""))
	backfilled.CatchUp = config.CatchUpAll
	chained := httpJob("chained", "@manually", url(""))
	chained.After = &config.After{Job: jobs[0].Name}
	jobs = append(jobs, capped, manual, backfilled, chained)
	for i := range jobs {
		if jobs[i].Name != "backfilled" && jobs[i].Schedule != "@manually" {
			jobs[i].StartAt = first.UTC().Format(time.RFC3339)
		}
	}
	cfg.Jobs = newConfig(jobs...).Jobs
	cfg.Worker.MaxParallel = 64
	return cfg
}

// decisions are n's runs by id: each scheduled tick in [from, to) and each
// run not scheduled (triggered, backfilled, chained); a max_runs job's
// runs by their number.
func decisions(t *testing.T, n *node, from, to time.Time) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, j := range n.config().Jobs {
		recs := records(t, n.client, j.Name)
		if j.MaxRuns > 0 {
			out[j.Name+" runs"] = strconv.Itoa(len(recs))
			continue
		}
		triggered := map[string][]string{}
		for id, r := range recs {
			switch r.Trigger {
			case runs.Schedule, runs.Retry, runs.Chain:
				if r.ScheduledAt.Before(from) || !r.ScheduledAt.Before(to) {
					continue
				}
			default: // a manual run's id is its own cluster's; backfills by id too
				triggered[j.Name+" "+string(r.Trigger)] = append(triggered[j.Name+" "+string(r.Trigger)], string(r.Outcome))
				continue
			}
			out[id] = fmt.Sprintf("%s (attempt %d)", r.Outcome, r.Attempt)
			if r.Outcome == runs.Skipped {
				out[id] += ": " + r.Error // both paths word a skip alike
			}
		}
		for k, v := range triggered {
			slices.Sort(v)
			out[k] = strings.Join(v, ", ")
		}
	}
	return out
}

func unionKeys(a, b map[string]string) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}
