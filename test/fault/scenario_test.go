package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/test/cluster"
)

type faultKind string

const (
	killLeader      faultKind = "kill-leader"      // SIGKILL the leader replica, restart it
	stopLeader      faultKind = "stop-leader"      // SIGSTOP the leader for 2×TTL
	stopWorker      faultKind = "stop-worker"      // SIGSTOP a replica holding a slot for 2×TTL
	partition       faultKind = "partition"        // pause a slot holder's proxies for 2×TTL
	partitionLeader faultKind = "partition-leader" // the same for the leader
	killEtcdMember  faultKind = "kill-etcd-member" // SIGKILL a follower member, restart it
	killEtcdLeader  faultKind = "kill-etcd-leader" // SIGKILL the raft leader, restart it
	etcdDown        faultKind = "etcd-down"        // SIGKILL every member for 2×TTL
	slowLink        faultKind = "slow-link"        // TTL/8 each way on a replica's etcd traffic
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
	seed    uint64
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

// injected is one fault as it happened.
type injected struct {
	kind     faultKind
	target   string
	start    time.Time
	end      time.Time     // healed
	leader   bool          // scheduling had to move or wait: a failover window
	failover time.Duration // leader faults: to the new leader's first tick write
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
	if sc.control {
		bins = binaries(t, "unsafe_noguard")
	} else {
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

// failover measures from t0 to the first tick written by a leader other
// than old, as the witness's own watch saw it.
func (r *runner) failover(t0 time.Time, old string) time.Duration {
	obs := r.w.Observer()
	var took time.Duration
	r.waitFor(60*time.Second, "a new leader to write ticks", func() bool {
		for _, lc := range obs.Leaders() {
			if lc.At.After(t0) && lc.ID != "" && lc.ID != old {
				if at := obs.FirstCursorWriteAfter(lc.At); !at.IsZero() {
					took = at.Sub(t0)
					return true
				}
			}
		}
		return false
	})
	return took
}

// killAndRestart SIGKILLs the leader l, waits for the next one's first
// tick and starts l again: the kill's window, for the checker, runs to
// then.
func (r *runner) killAndRestart(f *injected, l *cluster.Replica, must func(error)) {
	f.target, f.leader, f.start = l.ID, true, time.Now()
	must(l.Kill())
	f.failover = r.failover(f.start, l.ID)
	must(l.Start())
	r.kills = append(r.kills, Kill{Holder: l.ID, Window: Window{f.start, time.Now()}})
}

func (r *runner) inject(kind faultKind) injected {
	r.t.Helper()
	ttl := r.sc.ttl
	f := injected{kind: kind}
	must := func(err error) {
		r.t.Helper()
		if err != nil {
			r.t.Fatalf("%s: %v", kind, err)
		}
	}
	switch kind {
	case killLeader:
		r.killAndRestart(&f, r.leader(), must)
	case stopLeader:
		l := r.leader()
		f.target, f.leader, f.start = l.ID, true, time.Now()
		must(l.Stop())
		f.failover = r.failover(f.start, l.ID)
		r.hold(time.Until(f.start.Add(2 * ttl)))
		must(l.Cont())
		r.freezes = append(r.freezes, Freeze{Holder: l.ID, Window: Window{f.start, time.Now()}})
	case stopWorker:
		h, _ := r.holder()
		f.target, f.start = h.ID, time.Now()
		must(h.Stop())
		r.hold(2 * ttl)
		must(h.Cont())
		r.freezes = append(r.freezes, Freeze{Holder: h.ID, Window: Window{f.start, time.Now()}})
	case partition, partitionLeader:
		l := r.leader()
		h := l
		if kind == partition {
			h, l = r.holder()
		}
		f.target, f.leader, f.start = h.ID, h == l, time.Now()
		h.PauseProxy()
		r.hold(2 * ttl)
		h.ResumeProxy()
	case slowLink:
		h := r.c.Replicas[r.rng.IntN(len(r.c.Replicas))]
		f.target, f.start = h.ID, time.Now()
		h.DelayProxy(ttl/8, ttl/8)
		r.hold(2 * ttl)
		h.DelayProxy(0, 0)
	case killEtcdMember, killEtcdLeader:
		ctx, cancel := r.ctx(30 * time.Second)
		el, err := r.c.EtcdLeader(ctx)
		cancel()
		must(err)
		m := el
		if kind == killEtcdMember {
			others := slices.DeleteFunc(slices.Clone(r.c.Members), func(x *cluster.Member) bool { return x == el })
			m = others[r.rng.IntN(len(others))]
		}
		f.target, f.leader, f.start = m.Name, kind == killEtcdLeader, time.Now()
		must(m.Kill())
		r.hold(ttl)
		must(m.Restart())
		ctx, cancel = r.ctx(60 * time.Second)
		must(m.WaitHealthy(ctx))
		cancel()
	case etcdDown:
		f.target, f.leader, f.start = "all members", true, time.Now()
		must(r.c.KillEtcd())
		r.checkNotReady(f.start)
		r.hold(time.Until(f.start.Add(2 * ttl)))
		// The store is down until the members restart: from then on a
		// quorum may serve (and runs may rightly start) before the last
		// member answers the health check below.
		restarting := time.Now()
		ctx, cancel := r.ctx(90 * time.Second)
		must(r.c.StartEtcd(ctx))
		cancel()
		up := time.Now()
		r.etcdDown = append(r.etcdDown, Window{f.start, restarting})
		ctx, cancel = r.ctx(60 * time.Second)
		run, err := r.w.WaitRun(ctx, func(x *cluster.Run) bool { return x.Start.After(up) && !x.Rejected })
		cancel()
		if err != nil {
			r.problems = append(r.problems, fmt.Sprintf("etcd down: no run started within 60s of etcd's return at %s", up.Format("15:04:05.000")))
		} else {
			r.resumes = append(r.resumes, run.Start.Sub(up))
		}
	default:
		if !r.injectEdge(&f, must) && !r.injectRoll(&f, must) && !r.injectReload(&f, must) {
			r.t.Fatalf("unknown fault %q", kind)
		}
	}
	f.end = time.Now()
	return f
}

// checkNotReady: with the store down every replica keeps running and
// answers /readyz with 503 within the session's TTL (plus slack for a slow
// machine).
func (r *runner) checkNotReady(since time.Time) {
	deadline := since.Add(r.sc.ttl + 10*time.Second)
	for _, rep := range r.c.Replicas {
		var err error
		if !poll.Within(time.Until(deadline), func() bool {
			ctx, cancel := r.ctx(3 * time.Second)
			err = rep.API.Ready(ctx)
			cancel()
			e, ok := client.AsError(err)
			return ok && e.Status == http.StatusServiceUnavailable
		}) {
			got := "200 OK"
			if err != nil {
				got = err.Error()
			}
			r.problems = append(r.problems, fmt.Sprintf("etcd down: %s /readyz answered %s %s after every member was killed; want 503",
				rep.ID, got, time.Since(since).Round(time.Millisecond)))
		}
		if !rep.Running() {
			r.problems = append(r.problems, fmt.Sprintf("etcd down: replica %s exited", rep.ID))
		}
	}
}

// fanIns are the fan-in keys of the sharded jobs' ticks up to rev, those
// the leader pruned since too (prunefanin.go), replayed from etcd's
// history: Version counts every write of a tick's key, across a prune, so a
// key written again after its prune is a fan-in too many.
func (r *runner) fanIns(ctx context.Context, cli *clientv3.Client, rev int64) map[string]FanIn {
	r.t.Helper()
	out := map[string]FanIn{}
	err := replay(ctx, cli, keys.New(prefix).FanIns(), rev, func(ev *clientv3.Event) error {
		key := string(ev.Kv.Key)
		if strings.HasSuffix(key, "/worst") {
			return nil
		}
		tick := key[strings.LastIndex(key, "/")+1:]
		if ev.Type == clientv3.EventTypeDelete {
			f := out[tick]
			f.Pruned = true
			out[tick] = f
			return nil
		}
		f := FanIn{Version: out[tick].Version + 1}
		if t, ok := queue.DecodeTick(ev.Kv.Value); ok {
			f.Done, f.Outcome = true, t.Outcome
		}
		out[tick] = f
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// leftovers are the assignments and claim markers in etcd now, with the
// instant each was for, and the job and resource slots, with when their
// run started.
func (r *runner) leftovers(ctx context.Context, cli *clientv3.Client) []Left {
	r.t.Helper()
	layout := keys.New(prefix)
	out := r.slotsLeft(ctx, cli)
	for _, dir := range []string{layout.Assignments(), layout.Claimed()} {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if _, at, _, ok := layout.ParseAssignment(key); ok {
				out = append(out, Left{Key: key, At: at})
			} else if _, at, _, _, ok := layout.ParseClaimMarker(key); ok {
				out = append(out, Left{Key: key, At: at})
			} else {
				r.problems = append(r.problems, "leftovers: "+key+" is neither an assignment nor a claim marker")
			}
		}
	}
	return out
}

// slotsLeft are the job and resource slots in etcd now, each with its
// run's start (a strict retry's kept slot: its first attempt's).
func (r *runner) slotsLeft(ctx context.Context, cli *clientv3.Client) []Left {
	r.t.Helper()
	layout := keys.New(prefix)
	var out []Left
	for _, dir := range []string{layout.Slots(), layout.Resources()} {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if _, _, _, ok := layout.ParseSlot(key); !ok {
				continue // a resource's definition, not a slot
			}
			var v slots.Value
			if err := json.Unmarshal(kv.Value, &v); err != nil || v.StartedAt.IsZero() {
				r.problems = append(r.problems, fmt.Sprintf("leftovers: slot %s holds %q, not a run's slot value", key, kv.Value))
				continue
			}
			out = append(out, Left{Key: key, At: v.StartedAt})
		}
	}
	return out
}

// notificationsSeen are the notification ids still in the outbox, then
// those the receiver took: read in this order, a notification deleted
// between the two reads was taken before it.
func (r *runner) notificationsSeen(rcv *receiver) map[string]bool {
	r.t.Helper()
	cli, ctx, done := r.etcd(30 * time.Second)
	defer done()
	resp, err := cli.Get(ctx, keys.New(prefix).Outbox(), clientv3.WithPrefix())
	if err != nil {
		r.t.Fatal(err)
	}
	seen := rcv.taken()
	for _, kv := range resp.Kvs {
		if n, err := notify.Decode(kv.Value); err == nil {
			seen[n.ID] = true
		}
	}
	return seen
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
