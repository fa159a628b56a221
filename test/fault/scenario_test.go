package fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/test/cluster"
)

// scenario is one cluster run: a warm-up, faults one after another with a
// gap between them, a settle period, then the checker.
type scenario struct {
	name    string
	ttl     time.Duration
	faults  []faultKind
	gap     time.Duration // between a heal and the next fault
	warmup  time.Duration
	settle  time.Duration
	control bool // the unsafe_noguard binary and a witness without fencing
	// tags, when set, build the scheduler with these tags (a positive
	// control of another rule: TestPositiveControlShedTwice).
	tags []string
	seed uint64
	// old is a commit (any git ref): the cluster starts on the scheduler
	// built at it, and the upgrade/downgrade faults swap binaries.
	old string
	// outlast adds the job whose runs outlast shutdown_grace (roll_test.go).
	outlast bool
	// requireResumed: a run cut by a restart must run again or be recorded
	// interrupted (History.RequireResumed).
	requireResumed bool
	// safetyOnly: liveness violations are reported, not failed (a rolling
	// upgrade, where a replica of another version may idle).
	safetyOnly bool
	// lean runs leanWorkload instead of workload: no chain, sink or
	// sharded job to check.
	lean bool
	// replicas is the cluster's replica count (0: cluster.Options'
	// three): from four on, an instant's lean ticks go to three of them.
	replicas int
}

type runner struct {
	t        *testing.T
	sc       scenario
	c        *cluster.Cluster
	w        *cluster.Witness
	rng      *rand.Rand
	faults   []injected
	freezes  []Freeze
	kills    []Kill
	etcdDown []Window
	resumes  []time.Duration // etcd back -> first run started
	problems []string        // seen while injecting

	beats      string // the exec job's heartbeat folder
	beatChecks int    // exec runs whose heartbeats were checked after a kill

	bins     versions  // the binaries a rolling upgrade swaps
	rolled   int       // graceful restarts so far (the next replica in turn)
	restarts []Restart // the graceful restarts, for the checker

	backfilled backfills // what the backfiller asked (backfill_test.go)
}

// outcome of a scenario.
type outcome struct {
	report  *Report
	summary string
	history *History
}

func runScenario(t *testing.T, sc scenario) outcome {
	var bins cluster.Binaries
	switch {
	case sc.control:
		bins = binaries(t, "unsafe_noguard")
	case len(sc.tags) > 0:
		bins = binaries(t, sc.tags...)
	default:
		bins = binaries(t)
	}
	vers := versions{now: bins.Scheduler}
	if sc.old != "" {
		vers.old = oldBinary(t, sc.old)
		bins.Scheduler = vers.old
	}
	w, err := cluster.StartWitness(cluster.WitnessOptions{Fencing: !sc.control})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	beats := t.TempDir()
	rcv := startReceiver(t)
	cfg, jobs, resources := workload(sc.ttl, w, rcv.srv.URL+"/notify", beats, sc.old == "")
	if sc.lean {
		cfg, jobs, resources = leanWorkload(sc.ttl, w, beats)
	}
	if sc.outlast {
		cfg, jobs = withOutlast(cfg, jobs, w)
	}
	dir := t.TempDir()
	if keep := os.Getenv("FAULT_LOG_DIR"); keep != "" {
		// Keep data and logs after the test, for a post-mortem.
		dir = filepath.Join(keep, fmt.Sprintf("%s-%d", sc.name, time.Now().Unix()))
	}
	c := cluster.StartT(t, cluster.Options{Dir: dir, Binaries: bins, Config: cfg, Replicas: sc.replicas})
	if err := w.Watch(c.Endpoints(), prefix); err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, sc: sc, c: c, w: w, beats: beats, bins: vers, rng: rand.New(rand.NewPCG(sc.seed, sc.seed^0x5eed))}
	t.Logf("%s: seed %d, ttl %s, %d faults, logs in %s", sc.name, sc.seed, sc.ttl, len(sc.faults), c.Dir)

	// Warm-up: every job has run once, then the schedule's own warm-up.
	r.waitFor(90*time.Second, "every job to run once", func() bool {
		seen := map[string]bool{}
		for _, run := range w.Runs() {
			seen[run.Job] = true
		}
		for _, j := range jobs {
			if !seen[j.Name] {
				return false
			}
		}
		return sc.old != "" || sc.lean || seen[sharded.Name] // the upgrade's and the lean workload have none
	})
	ticksFrom := time.Now()
	stopBackfills := func() backfills { return backfills{} }
	if sc.old == "" && !sc.lean && !sc.control {
		stopBackfills = r.startBackfills()
	}
	r.hold(sc.warmup)

	for i, kind := range sc.faults {
		f := r.inject(kind)
		r.faults = append(r.faults, f)
		t.Logf("fault %d/%d %s on %s: %s..%s%s", i+1, len(sc.faults), f.kind, f.target,
			f.start.Format("15:04:05.000"), f.end.Format("15:04:05.000"), failoverNote(f))
		r.waitHealthy()
		r.hold(sc.gap)
	}
	healed := time.Now()
	r.backfilled = stopBackfills()
	if p := r.backfilled.problem(); p != "" {
		r.problems = append(r.problems, p)
	}
	r.hold(sc.settle)

	hist := r.history(jobs, resources, ticksFrom, healed)
	if !sc.lean {
		hist.Chains, hist.Notify = chains, notified
	}
	if sc.old == "" && !sc.lean {
		hist.Sharded = []Sharded{sharded}
	}
	hist.Notify.Seen = r.notificationsSeen(rcv)
	hist.Rates = workloadRates
	hist.Restarts, hist.RequireResumed = r.restarts, sc.requireResumed
	rep := Check(hist)
	r.dumpStalled(rep.Violations)
	rep.Violations = append(r.problems, rep.Violations...)
	if sc.safetyOnly {
		splitLiveness(rep)
	}
	sum := r.summary(rep)
	t.Log(sum)
	fmt.Println(sum)
	return outcome{report: rep, summary: sum, history: hist}
}

func failoverNote(f injected) string {
	if f.failover > 0 {
		return fmt.Sprintf(" (failover %s)", f.failover.Round(time.Millisecond))
	}
	return ""
}

// hold lets time pass: the fault schedule itself (a fault lasts this long,
// the next comes this much later), not a wait for a condition.
func (r *runner) hold(d time.Duration) { time.Sleep(d) }

func (r *runner) waitFor(within time.Duration, what string, cond func() bool) {
	r.t.Helper()
	poll.For(r.t, within, r.sc.name+": "+what, cond)
}

func (r *runner) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// heldSlots is what the replicas' API lists of the slots, or false when
// none answered within 5s.
func (r *runner) heldSlots() ([]client.Slot, bool) {
	ctx, cancel := r.ctx(5 * time.Second)
	defer cancel()
	held, err := r.c.Slots(ctx)
	return held, err == nil
}

// etcd is a client of the cluster's etcd and a context of d for its
// requests; done closes both.
func (r *runner) etcd(d time.Duration) (*clientv3.Client, context.Context, func()) {
	r.t.Helper()
	cli, err := r.c.Client()
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := r.ctx(d)
	return cli, ctx, func() {
		cancel()
		_ = cli.Close()
	}
}

// waitHealthy: every member and replica runs, every replica is ready and
// one leads.
func (r *runner) waitHealthy() {
	r.t.Helper()
	ctx, cancel := r.ctx(90 * time.Second)
	defer cancel()
	if err := r.c.WaitEtcdHealthy(ctx); err != nil {
		r.t.Fatalf("etcd did not recover: %v", err)
	}
	for _, rep := range r.c.Replicas {
		if err := rep.WaitReady(ctx); err != nil {
			r.t.Fatalf("replica did not recover: %v", err)
		}
	}
	if _, err := r.c.WaitLeader(ctx); err != nil {
		r.t.Fatalf("no leader after the fault: %v", err)
	}
}

func (r *runner) leader() *cluster.Replica {
	r.t.Helper()
	ctx, cancel := r.ctx(60 * time.Second)
	defer cancel()
	l, err := r.c.WaitLeader(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

func (r *runner) summary(rep *Report) string {
	var kills []time.Duration
	for _, f := range r.faults {
		if f.kind == killLeader {
			kills = append(kills, f.failover)
		}
	}
	revs, restarts := r.w.Observer().Revisions()
	return fmt.Sprintf("fault summary %s: faults=%d runs=%d violations=%d rejected_stale_tokens=%d superseded=%d "+
		"ticks=%d ticks_lost_in_failover=%d failover(kill-leader) min/median/max=%s resume_after_etcd=%s watched_revisions=%d watch_restarts=%d "+
		"chained_runs=%d notifications=%d exec_kill_checks=%d rate_window_violations=%d rate_starts_excused=%d key_violations=%d cancelled_first=%d "+
		"ticks_accounted=%d restarts=%d %s unenforced=%d take_overs=%d shard_ticks=%d fan_ins=%d fan_ins_pruned=%d lost_checked=%d pruned=%d %s",
		r.sc.name, len(r.faults), rep.RunsChecked, len(rep.Violations), rep.Rejected, rep.Superseded,
		rep.TicksChecked, rep.TicksLost, spread(kills), spread(r.resumes), revs, restarts, rep.ChainRuns, rep.Notified, r.beatChecks,
		rep.RateWindows, rep.ExcusedRate, rep.KeyViolations, rep.CancelledFirst,
		rep.TicksAccounted, len(r.restarts), rep.Cuts, len(rep.Unenforced), takeOvers(r.c.Dir), rep.ShardTicks, rep.FanIns, rep.FanInsPruned, rep.LostChecked, rep.Pruned, r.backfilled)
}

func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%s/%s/%s", s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
