package leader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
)

// An instant's ticks go to three workers, the same for every window of a
// pass (and every pass: rendezvous on the instant), and the instants take
// turns over the workers: at five, an instant spread over all of them cost
// each run half as many revisions again.
func TestAnInstantsTicksGoToThreeWorkers(t *testing.T) {
	workers := []string{"a", "b", "c", "d", "e"}
	sets := newInstantSets(workers, windowWorkers)
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const instants = 300
	inTriple := map[string]int{}
	for i := range instants {
		at := base.Add(time.Duration(i) * time.Second)
		got := map[string]bool{}
		for turn := range 4 {
			w := tickWorkers{sets, turn}
			for j := range 100 {
				got[w.slot(fmt.Sprintf("job%03d", j), at).worker] = true
			}
		}
		if len(got) != windowWorkers {
			t.Fatalf("the ticks at %s went to %v, want %d workers", at, got, windowWorkers)
		}
		for w := range got {
			inTriple[w]++
		}
	}
	for _, w := range workers {
		if share := float64(inTriple[w]) / instants; share < 0.5 || share > 0.7 {
			t.Errorf("%s took %.2f of the instants, want about 3/5: %v", w, share, inTriple)
		}
	}
}

// When an instant needs more workers than three (instantWorkersFor), the
// windows of a pass take turns over them, three each.
func TestWindowsTakeTurnsOverAnInstantsWorkers(t *testing.T) {
	workers := []string{"a", "b", "c", "d", "e"}
	sets := newInstantSets(workers, len(workers))
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	all := map[string]bool{}
	for turn := range 2 {
		w := tickWorkers{sets, turn}
		got := map[string]bool{}
		for j := range 100 {
			got[w.slot(fmt.Sprintf("job%03d", j), at).worker] = true
		}
		if len(got) != windowWorkers {
			t.Errorf("window %d went to %v, want %d workers", turn, got, windowWorkers)
		}
		for w := range got {
			all[w] = true
		}
	}
	if len(all) != len(workers) {
		t.Errorf("two windows went to %v, want all %d workers", all, len(workers))
	}
	few := newInstantSets([]string{"a", "b"}, windowWorkers)
	if got := few.at(at); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("two workers: an instant goes to %v, want both", got)
	}
}

// An instant's ticks go to as many workers as hold every job's run in half
// their places, three at least.
func TestInstantWorkersFollowThePlaces(t *testing.T) {
	for _, c := range []struct{ jobs, maxParallel, want int }{
		{1000, 2048, 3}, {1000, 64, 32}, {100, 64, 4}, {10, 64, 3}, {5, 1, 5},
	} {
		cfg := jobstest.Config()
		for i := range c.jobs {
			cfg.Jobs = append(cfg.Jobs, jobstest.Job(fmt.Sprintf("j%d", i), "@every 1s"))
		}
		cfg.Worker.MaxParallel = c.maxParallel
		if got := instantWorkersFor(cfg); got != c.want {
			t.Errorf("%d jobs, max_parallel %d: %d workers an instant, want %d", c.jobs, c.maxParallel, got, c.want)
		}
	}
}

// A window planned for a worker that left goes to the others.
func TestInstantSetsAmongTheLive(t *testing.T) {
	sets := newInstantSets([]string{"a", "b", "c", "d"}, windowWorkers)
	if got := sets.among([]string{"a", "b", "c", "d", "e"}); got != sets {
		t.Errorf("all live: a new set")
	}
	if got := sets.among([]string{"a", "c"}); got == nil || !slices.Equal(got.all, []string{"a", "c"}) {
		t.Errorf("b and d left: workers %v, want a and c", got)
	}
	if got := sets.among([]string{"e"}); got != nil {
		t.Errorf("none live: %v, want nil", got.all)
	}
}

// Every assignment the leader writes can be taken over whole: its jobs fit
// the take-overs' one transaction under etcd's default --max-txn-ops
// (TestATakeOverAtEtcdsLimit shows that bound against etcd). Larger, a
// worker killed holding runs claimed ahead would keep their slots until
// its lease expired, and their ticks would be lost.
func TestEveryAssignmentCanBeTakenOver(t *testing.T) {
	if most := assign.MaxTakeOverJobs(assign.DefaultMaxTxnOps); leanJobsPerAssignment > most {
		t.Fatalf("assignments of up to %d jobs; a take-over moves at most %d", leanJobsPerAssignment, most)
	}
}
