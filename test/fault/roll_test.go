package fault

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// Rolling restarts and upgrades (G1 across versions,
// docs/protocol.md#mixed-versions-g1-across-a-rolling-upgrade-and-back; a
// graceful restart loses no work,
// docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts): one replica at a time gets SIGTERM,
// exits, and starts again, on the same binary or another version's.
const (
	// rollRestart: the next replica in turn is restarted on its binary.
	rollRestart faultKind = "restart"
	// rollUpgrade and rollDowngrade: the same, starting it again on the
	// working tree's binary, or on the old commit's.
	rollUpgrade   faultKind = "upgrade"
	rollDowngrade faultKind = "downgrade"
)

// defaultOldCommit is the commit a rolling upgrade starts from when
// FAULT_OLD_COMMIT names none: the release before the run protocol of docs/protocol.md became the engine's to choose.
const defaultOldCommit = "217588b"

// versions are the scheduler binaries of a rolling upgrade.
type versions struct{ old, now string }

// rollScenarios are the profiles FAULT_PROFILE=rolling and =upgrade.
func rollScenarios(profile string) []scenario {
	// The settle outlasts G2's bound (starting_deadline + session_ttl +
	// accountSlack), so that G2 judges the ticks of the last restart too.
	ttl := 2 * time.Second
	base := scenario{ttl: ttl, gap: 3 * time.Second, warmup: 4 * time.Second,
		settle: startingDeadline + ttl + accountSlack + 2*time.Second, seed: seed(), outlast: true}
	if profile == "upgrade" {
		old := os.Getenv("FAULT_OLD_COMMIT")
		if old == "" {
			old = defaultOldCommit
		}
		base.name, base.old, base.safetyOnly = "upgrade-ttl2s", old, true
		// etcd going away leaves workers behind: a mixed cluster's new
		// replicas shed late ticks in chunk records (docs/design-shed.md)
		// that the old ones read, once every member advertises it.
		base.faults = []faultKind{rollUpgrade, etcdDown, rollUpgrade, etcdDown, rollUpgrade, rollDowngrade, etcdDown, rollDowngrade, rollDowngrade}
		return []scenario{base}
	}
	// Every replica runs this commit, which records a cut run interrupted
	// and queues it again: a cut run that did neither is a violation. (An
	// upgrade's old replicas record it cancelled: reported there.)
	base.name, base.requireResumed = "rolling-ttl2s", true
	base.faults = repeat([]faultKind{rollRestart}, 6) // every replica twice
	return []scenario{base}
}

// oldBinary builds (once per commit, in the suite's temp dir) the
// scheduler at ref.
func oldBinary(t *testing.T, ref string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	bin, err := cluster.BuildAt(ctx, binDir, ref)
	if err != nil {
		t.Fatalf("FAULT_OLD_COMMIT=%s: %v", ref, err)
	}
	t.Logf("scheduler at %s: %s (%s)", ref, bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// injectRoll runs the faults of this file; it reports whether kind was one.
func (r *runner) injectRoll(f *injected, must func(error)) bool {
	var bin string
	switch f.kind {
	case rollRestart:
	case rollUpgrade:
		bin = r.bins.now
	case rollDowngrade:
		bin = r.bins.old
	default:
		return false
	}
	if f.kind != rollRestart && bin == "" {
		r.t.Fatalf("%s needs a scenario with an old commit", f.kind)
	}
	rep := r.c.Replicas[r.rolled%len(r.c.Replicas)]
	r.rolled++
	f.target, f.leader, f.start = rep.ID, r.leader() == rep, time.Now()
	limit := shutdownGrace + 10*time.Second
	err := rep.Term(limit + 20*time.Second)
	exit := time.Now()
	if took := exit.Sub(f.start); err != nil || took > limit {
		r.problems = append(r.problems, fmt.Sprintf("%s: %s exited %s after SIGTERM (err %v); want within shutdown_grace + 10s = %s",
			f.kind, rep.ID, took.Round(time.Millisecond), err, limit))
	}
	r.restarts = append(r.restarts, Restart{Replica: rep.ID, Term: f.start, Exit: exit})
	if bin != "" {
		must(rep.SetBinary(bin))
	}
	must(rep.Start())
	ctx, cancel := r.ctx(90 * time.Second)
	defer cancel()
	must(rep.WaitReady(ctx))
	return true
}

// outlastJob runs longer than shutdown_grace, three at a time, so that
// each graceful restart cuts about one of its runs. Only the workload's
// features: an older version must accept the config.
const outlastJob = "outlast"

// withOutlast adds outlastJob to the workload's config and jobs.
func withOutlast(cfg string, jobs []Job, w *cluster.Witness) (string, []Job) {
	run := 2 * shutdownGrace
	cfg += fmt.Sprintf(`  - name: %s
    schedule: "@every 1s"
    max_concurrency: 3
    catch_up: latest
    starting_deadline: %s
    history_limit: 100000
    skipped_history_limit: 100000
    overlap: skip
    retries: {max: 1, backoff: 100ms, max_backoff: 1s}
    timeout: %s
    http: {method: POST, url: %q}
`, outlastJob, startingDeadline, 4*run, w.URL("sleep="+run.String()))
	return cfg, append(slices.Clone(jobs), Job{Name: outlastJob, Every: time.Second, MaxConcurrency: 3,
		CatchUp: "latest", StartingDeadline: startingDeadline})
}

// liveness are the properties an upgrade scenario reports without
// failing: a replica of another version may idle (docs/protocol.md#mixed-versions-g1-across-a-rolling-upgrade-and-back), so only
// safety (G1, limits, fencing) is enforced across versions.
var liveness = []string{"ticks:", "accounted:", "healed:", "chain:", "notifications:", "etcd down:"}

// splitLiveness moves the liveness violations of rep to its Unenforced.
func splitLiveness(rep *Report) {
	var safety []string
	for _, v := range rep.Violations {
		if slices.ContainsFunc(liveness, func(p string) bool { return strings.HasPrefix(v, p) }) {
			rep.Unenforced = append(rep.Unenforced, v)
			continue
		}
		safety = append(safety, v)
	}
	rep.Violations = safety
}
