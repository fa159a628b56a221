package fault

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// profile picks the fault schedule: FAULT_PROFILE=long runs dozens of
// faults over several minutes; the default is a short one that fits in
// `go test ./...`. FAULT_SEED fixes the random choices.
func profile() string {
	if p := os.Getenv("FAULT_PROFILE"); p != "" {
		return p
	}
	return "short"
}

func seed() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("FAULT_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}

var every = []faultKind{killLeader, stopWorker, partition, killEtcdMember, stopLeader, slowLink,
	partitionLeader, killEtcdLeader, etcdDown, killExecHolder, etcdDownTerm, reloadKillLeader}

func repeat(kinds []faultKind, n int) []faultKind {
	var out []faultKind
	for len(out) < n {
		out = append(out, kinds[len(out)%len(kinds)])
	}
	return out
}

// TestFaults: under every fault, no double runs, no lost ticks outside
// failover windows, fencing tokens increasing, and scheduling back after
// each heal.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection runs real processes for a minute or more")
	}
	var scenarios []scenario
	switch profile() {
	case "long":
		scenarios = []scenario{
			{name: "long-ttl2s", ttl: 2 * time.Second, faults: repeat(every, 27), gap: 3 * time.Second,
				warmup: 5 * time.Second, settle: 12 * time.Second, seed: seed()},
			// The settle outlasts the longest run (3×TTL = 15s) plus a tick
			// and a failover: a run that started just before the last heal
			// rightly holds its only slot that long, and "every job runs
			// again" needs a run to start after it.
			{name: "long-ttl5s", ttl: 5 * time.Second, faults: repeat(every, len(every)), gap: 4 * time.Second,
				warmup: 5 * time.Second, settle: 25 * time.Second, seed: seed()},
			// Replicas that keep no view of the job slots while every run
			// is lean (lean_test.go).
			{name: "long-lean-ttl2s", ttl: 2 * time.Second, faults: repeat(every, len(every)), gap: 3 * time.Second,
				warmup: 5 * time.Second, settle: 12 * time.Second, seed: seed(), lean: true},
			lean5(),
		}
	case "lean5":
		scenarios = []scenario{lean5()}
	case "rolling", "upgrade":
		scenarios = rollScenarios(profile())
	case "reload":
		// Reloads that change lean jobs, each followed by the leader's
		// SIGKILL (reload_test.go), alone.
		scenarios = []scenario{{name: "reload-ttl2s", ttl: 2 * time.Second,
			faults: repeat([]faultKind{reloadKillLeader}, 8),
			gap:    2 * time.Second, warmup: 4 * time.Second, settle: 10 * time.Second, seed: seed()}}
	case "edges":
		// The faults of docs/design-edges.md#operating-at-the-edges alone, for a quick look.
		scenarios = []scenario{{name: "edges-ttl2s", ttl: 2 * time.Second,
			faults: []faultKind{killExecHolder, etcdDownTerm, killExecHolder},
			gap:    2 * time.Second, warmup: 4 * time.Second, settle: 10 * time.Second, seed: seed()}}
	default:
		scenarios = []scenario{{name: "short-ttl2s", ttl: 2 * time.Second,
			faults: []faultKind{killLeader, stopWorker, partition, killEtcdLeader, etcdDown, stopLeader},
			gap:    2 * time.Second, warmup: 4 * time.Second, settle: 10 * time.Second, seed: seed()}}
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			out := runScenario(t, sc)
			for _, v := range out.report.Violations {
				t.Error(v)
			}
			for _, v := range out.report.Unenforced {
				t.Logf("reported, not enforced: %s", v)
			}
		})
	}
}

// TestPositiveControl: the same suite against a scheduler built without
// the lease guard (-tags unsafe_noguard) and a witness that accepts every
// token must find violations under the pause faults. A checker that never
// fails proves nothing.
func TestPositiveControl(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection runs real processes")
	}
	faults := []faultKind{stopWorker, partition, stopWorker, stopLeader, stopWorker}
	if profile() == "long" {
		faults = repeat([]faultKind{stopWorker, partition, stopLeader, partitionLeader}, 8)
	}
	// A pause finds an overlap only when it catches a replica in a long
	// run, which five faults miss now and then on a loaded host (one CI
	// run in five on 2026-11-28), and the long profile's eight now and
	// then too (its control found 0, 1 and 2 in three runs on 2026-11-28):
	// a second round, with a seed of its own, before the control is taken
	// to have failed.
	var out outcome
	for round := 1; round <= 2; round++ {
		s, name := seed(), "control-noguard-nofencing"
		if round > 1 {
			s, name = s+1, name+"-again"
		}
		out = runScenario(t, scenario{name: name, ttl: 2 * time.Second, faults: faults,
			gap: 2 * time.Second, warmup: 3 * time.Second, settle: 6 * time.Second, control: true, seed: s})
		if len(out.report.Violations) > 0 {
			break
		}
		t.Logf("positive control: round %d (seed %d) found no violation; one more round", round, s)
	}
	if len(out.report.Violations) == 0 {
		t.Fatal("positive control: the checker found no violation with the guard and fencing off")
	}
	// What the guard and fencing protect is max_concurrency: the control
	// must break that, not only liveness.
	overlap := false
	for _, v := range out.report.Violations {
		overlap = overlap || strings.HasPrefix(v, "overlap:")
	}
	if !overlap {
		t.Errorf("positive control: no overlap found, only %v", out.report.Violations)
	}
	checkFabricated(t, out.history)
	for i, v := range out.report.Violations {
		if i == 10 {
			t.Logf("... and %d more", len(out.report.Violations)-10)
			break
		}
		t.Logf("control violation (expected): %s", v)
	}
}

// lean5 is the lean workload on five replicas, where an instant's ticks go
// to the three ranked first for it (leader/leanwindow.go), and four are
// backups of each assignment: FAULT_PROFILE=lean5 alone, and in long.
func lean5() scenario {
	return scenario{name: "long-lean5-ttl2s", ttl: 2 * time.Second, faults: repeat(every, len(every)), gap: 3 * time.Second,
		warmup: 5 * time.Second, settle: 12 * time.Second, seed: seed(), lean: true, replicas: 5}
}

// The chunk-record rule's positive control (docs/design-shed.md,
// "Checks"): a scheduler built with -tags unsafe_shedtwice writes each
// tick of a chunk record a record of its own too, and the checker must
// report them recorded twice. etcd going away is what leaves workers
// behind enough to shed late ticks in chunk records (the long profile's
// saw 3 to 8 after each). In the long profile, or FAULT_PROFILE=control-shed.
func TestPositiveControlShedTwice(t *testing.T) {
	if testing.Short() || profile() != "long" && profile() != "control-shed" {
		t.Skip("the long profile's, or FAULT_PROFILE=control-shed")
	}
	var out outcome
	for round := 1; round <= 2; round++ {
		out = runScenario(t, scenario{name: fmt.Sprintf("control-shedtwice-%d", round), ttl: 2 * time.Second,
			faults: []faultKind{etcdDown, killEtcdLeader, etcdDown}, gap: 3 * time.Second, warmup: 5 * time.Second,
			settle: 8 * time.Second, seed: seed() + uint64(round), tags: []string{"unsafe_shedtwice"}})
		if slices.ContainsFunc(out.report.Violations, func(v string) bool { return strings.HasPrefix(v, "recorded twice:") }) {
			break
		}
		t.Logf("shed-twice control: round %d found no tick recorded twice (%d violations); one more round", round, len(out.report.Violations))
	}
	twice := 0
	for i, v := range out.report.Violations {
		if strings.HasPrefix(v, "recorded twice:") {
			twice++
		}
		if i < 10 {
			t.Logf("control violation: %s", v)
		}
	}
	if twice == 0 {
		t.Fatalf("shed-twice control: no tick recorded twice found; violations: %q", out.report.Violations)
	}
}
