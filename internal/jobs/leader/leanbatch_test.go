package leader

import (
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A lean job's ticks are assigned several at a time: a job ticking every
// second writes its cursor once per ten ticks, not once per tick (an
// index operation and an event on every replica per run); after every
// pass every tick within the lookahead is assigned, which a leader's death
// relies on; and jobs due at the same instants are assigned in the same
// passes, so each instant's runs share an assignment (and a worker's
// claims) rather than one each.
func TestALeanJobsCursorMovesOncePerSeveralTicks(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/batch/")
	var jobs []config.Job
	for i := range 8 {
		jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%d", i), "@every 1s"))
	}
	// Half the jobs come 2.25 s later, in a reload: they must fall in
	// with the others' passes, once the grid's third multiple is past
	// (the term's first passes are cut by farCap, so batches align only
	// from a later grid line).
	cfg, early := jobstest.Config(jobs...), jobstest.Config(jobs[:4]...)
	l := newLeanLeader(t, cli, "/batch/", early, clock, memberKV(layout, "r1", 0x10, assign.Protocol))
	l.d.Lookahead = LookaheadFor(5 * time.Second)
	const seconds = 40
	first := map[string]int64{}
	for i := range seconds * 4 {
		if i == 9 {
			l.d.Config = func() *config.Config { return cfg }
			l.syncJobs()
		}
		mustPass(t, l)
		assigned := assignedRuns(t, cli, layout)
		horizon := clock.Now().Add(l.d.Lookahead)
		for _, j := range l.d.Config().Jobs {
			if _, ok := first[j.Name]; !ok {
				first[j.Name] = cursorVersion(t, cli, layout, j.Name)
			}
			for at := clock.Now().Truncate(time.Second).Add(time.Second); !at.After(horizon); at = at.Add(time.Second) {
				if _, ok := assigned[runs.ID(j.Name, at)]; !ok {
					t.Fatalf("at %s, %s is not assigned; every tick within the lookahead (to %s) must be",
						clock.Now().Format(time.StampMilli), runs.ID(j.Name, at), horizon.Format(time.StampMilli))
				}
			}
		}
		clock.Advance(250 * time.Millisecond)
	}
	for _, j := range cfg.Jobs {
		if writes := cursorVersion(t, cli, layout, j.Name) - first[j.Name]; writes > seconds/8 {
			t.Errorf("%s's cursor written %d times in %d ticks, want at most one per 8 ticks", j.Name, writes, seconds)
		}
	}
	perInstant := map[time.Time]int{}
	for _, key := range stored(t, cli, layout.Assignments()) {
		_, at, _, ok := layout.ParseAssignment(layout.Assignments() + key)
		if !ok {
			t.Fatalf("assignment key %q", key)
		}
		if at.After(leanStart.Add(3 * leanWindowBatch().grid)) {
			perInstant[at]++
		}
	}
	for at, n := range perInstant {
		if n != 1 {
			t.Errorf("the 8 jobs' runs at %s are in %d assignments, want one", at.Format(time.StampMilli), n)
		}
	}
}

// Many jobs due at the same instants fill their assignments: a window
// holds as many jobs as its transaction takes cursors and assignments (an
// assignment a worker and instant), so 300 jobs ticking every second come
// to 25 runs an assignment on three workers, assigned ten ticks at a time
// (four windows of 97, 97, 97 and 9 jobs; 40 runs at most). On seven,
// whose places (max_parallel 64) an instant's 300 runs need all of, a
// window's ticks of an instant go to three of them (windowWorkers), the
// windows taking turns, so as many runs an assignment, and each worker its
// share of the runs; on five with room for them, an instant's runs go to
// three (an instant spread over five cost each run half as many revisions
// again):
// over all seven, a window of ten ticks held 57 jobs and an assignment 7
// runs, and of five (a 5 s batch) 92 and 10, a cursor written twice as
// often. Counted as an assignment per tick, a window held about 20 jobs,
// and an assignment 7 runs at three workers: as many claims more.
func TestManyJobsFillTheirAssignments(t *testing.T) {
	for _, c := range []struct {
		workers, least, maxParallel, perInstant int
	}{{3, 22, 64, 3}, {7, 22, 64, 7}, {5, 22, 2048, 3}} {
		t.Run(fmt.Sprintf("%d workers", c.workers), func(t *testing.T) {
			prefix := fmt.Sprintf("/full%d/", c.workers)
			cli, clock, layout := leanEtcd(t, prefix)
			var jobs []config.Job
			for i := range 300 {
				jobs = append(jobs, jobstest.Job(fmt.Sprintf("j%03d", i), "@every 1s"))
			}
			var members []*mvccpb.KeyValue
			for i := range c.workers {
				members = append(members, memberKV(layout, fmt.Sprintf("r%d", i+1), int64(0x10*(i+1)), assign.Protocol))
			}
			cfg := jobstest.Config(jobs...)
			cfg.Worker.MaxParallel = c.maxParallel
			l := newLeanLeader(t, cli, prefix, cfg, clock, members...)
			l.d.Lookahead = LookaheadFor(5 * time.Second)
			// Past the term's first passes (cut by farCap) and a full
			// batch after them: the steady state.
			steady := leanStart.Add(30 * time.Second)
			for clock.Now().Before(steady.Add(5 * time.Second)) {
				mustPass(t, l)
				clock.Advance(250 * time.Millisecond)
			}
			resp, err := cli.Get(t.Context(), layout.Assignments(), clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			assignments, runs := 0, 0
			byWorker := map[string]int{}
			byInstant := map[time.Time]map[string]bool{}
			for _, kv := range resp.Kvs {
				a, err := assign.Decode(layout, string(kv.Key), kv.Value)
				if err != nil {
					t.Fatal(err)
				}
				if a.At.After(steady) {
					assignments, runs = assignments+1, runs+len(a.Jobs)
					byWorker[a.Worker] += len(a.Jobs)
					if byInstant[a.At] == nil {
						byInstant[a.At] = map[string]bool{}
					}
					byInstant[a.At][a.Worker] = true
				}
			}
			if len(byWorker) != c.workers {
				t.Errorf("runs went to %d workers, want all %d: %v", len(byWorker), c.workers, byWorker)
			}
			for at, ws := range byInstant {
				if len(ws) != c.perInstant {
					t.Errorf("the runs at %s went to %d workers, want %d: %v", at, len(ws), c.perInstant, ws)
				}
			}
			for w, n := range byWorker {
				if share := float64(runs) / float64(c.workers); float64(n) < 0.6*share || float64(n) > 1.4*share {
					t.Errorf("worker %s got %d of %d runs, want its share %.0f within 40%%", w, n, runs, share)
				}
			}
			t.Logf("%d runs in %d assignments after %s", runs, assignments, steady.Sub(leanStart))
			if assignments == 0 || runs < c.least*assignments {
				t.Errorf("%d runs in %d assignments after %s, want %d or more an assignment",
					runs, assignments, steady.Sub(leanStart), c.least)
			}
		})
	}
}

// A new term assigns each lean job's next batch at its first look, though
// its predecessor's cursors cover the lookahead: the handover shows at
// once (test/bench's SIGTERM step times the new leader's first tick), and
// the margin its own death would need starts from its own passes.
func TestANewTermAssignsABatchAtItsFirstLook(t *testing.T) {
	cli, clock, layout := leanEtcd(t, "/fresh/")
	cfg := jobstest.Config(jobstest.Job("a", "@every 1s"), jobstest.Job("fast", "@every 100ms"))
	members := []*mvccpb.KeyValue{memberKV(layout, "r1", 0x10, assign.Protocol)}
	term := func(name string) *leader {
		l := newLeanLeader(t, cli, "/fresh/", cfg, clock, members...)
		l.d.Lookahead = LookaheadFor(5 * time.Second)
		elect(t, l, name)
		if err := l.ticks.loadCursors(t.Context()); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := term("first")
	for range 40 { // 10 s: past the term's first lookahead
		mustPass(t, first)
		clock.Advance(250 * time.Millisecond)
	}
	mustPass(t, first)
	before := map[string]int64{}
	for _, j := range cfg.Jobs {
		before[j.Name] = cursorVersion(t, cli, layout, j.Name)
	}
	second := term("second")
	mustPass(t, second)
	for _, j := range cfg.Jobs {
		if cursorVersion(t, cli, layout, j.Name) == before[j.Name] {
			c, _ := second.cursors.get(j.Name)
			t.Errorf("the new term's first pass left %s's cursor at %s (now %s)", j.Name, c.Format(time.StampMilli), clock.Now().Format(time.StampMilli))
		}
	}
}
