package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// The burst scenario (issue 24): N jobs "* * * * * *" (every second,
// jitter 0), every one due on the same whole second, against the witness;
// beside each step, on the same etcd, the reference: bare processes doing
// per trigger what a lean etcd scheduler does (refWorker).

// burstStep is one N: ours, then the reference.
type burstStep struct {
	Jobs int        `json:"jobs"`
	Ours burstSide  `json:"ours"`
	Ref  *burstSide `json:"reference,omitempty"`
}

type burstResult struct {
	Replicas int    `json:"replicas"`
	RefProcs int    `json:"reference_processes"`
	Warmup   string `json:"warmup"`
	Window   string `json:"window"`
	Grace    string `json:"grace"`
	// Steps: each -burst-jobs count, ours and the reference.
	Steps []burstStep `json:"steps"`
	// Ceilings: the largest N held (>= 98% of ticks delivered, p99 < 1 s),
	// 0 when none was; LargestStep bounds them.
	CeilingOurs int `json:"ceiling_ours"`
	CeilingRef  int `json:"ceiling_reference"`
	LargestStep int `json:"largest_step"`
	// Overload: ours at twice its ceiling (a step of Steps when there is
	// one at that N).
	Overload *burstSide `json:"overload,omitempty"`
	// ReplicaSteps: ours at goalReplicasJobs on a cluster of each further
	// -replicas count.
	ReplicaSteps []burstSide `json:"replica_steps,omitempty"`
}

// burstConfig is what the flags say about the scenario.
type burstConfig struct {
	jobs     []int
	replicas []int // the first: the steps' cluster; the rest: goal 6
	warmup   time.Duration
	window   time.Duration
	grace    time.Duration
	overload bool
	// shards: a job of that many shards due every second beside the
	// step's jobs (0: none); its shard runs count as runs, not as ticks.
	shards int
	// fsync: the steps' etcd members fsync their log, as the peer's
	// figures (issue 38) were measured.
	fsync bool
	// maxParallel is the replicas' worker.max_parallel.
	maxParallel int
	// history: ours' jobs start with full histories (bursthistory.go).
	history bool
}

// refProcsCount: the peer runs three replicas.
const refProcsCount = 3

func burst(ctx context.Context, f flags, bins cluster.Binaries) (burstResult, error) {
	bc := f.burst
	res := burstResult{Replicas: bc.replicas[0], RefProcs: refProcsCount, Warmup: bc.warmup.String(), Window: bc.window.String(), Grace: bc.grace.String()}
	if err := burstSteps(ctx, f, bins, &res); err != nil {
		return res, err
	}
	seen := map[int]int{bc.replicas[0]: 1}
	for _, k := range bc.replicas[1:] {
		// Each further cluster's directory and profiles are its own: a
		// count that comes again (-replicas 3,5,3) is numbered.
		seen[k]++
		tag := fmt.Sprintf("%dreplicas", k)
		if seen[k] > 1 {
			tag += fmt.Sprintf("-%d", seen[k])
		}
		e, err := startBurstEnv(ctx, f, bins, k, tag)
		if err != nil {
			return res, err
		}
		s, err := burstOurs(ctx, e, bc, goalReplicasJobs)
		e.close()
		if err != nil {
			return res, err
		}
		res.ReplicaSteps = append(res.ReplicaSteps, s)
	}
	return res, nil
}

// burstSteps runs every step, ours then the reference, and the overload
// step, on one cluster.
func burstSteps(ctx context.Context, f flags, bins cluster.Binaries, res *burstResult) error {
	bc := f.burst
	e, err := startBurstEnv(ctx, f, bins, res.Replicas, "")
	if err != nil {
		return err
	}
	defer e.close()
	var ours, refs []burstSide
	for _, n := range bc.jobs {
		st := burstStep{Jobs: n}
		if st.Ours, err = burstOurs(ctx, e, bc, n); err != nil {
			return err
		}
		ref, err := burstReference(ctx, e, bc, n)
		if err != nil {
			return err
		}
		st.Ref = &ref
		res.Steps = append(res.Steps, st)
		ours, refs = append(ours, st.Ours), append(refs, ref)
		res.LargestStep = max(res.LargestStep, n)
	}
	res.CeilingOurs, res.CeilingRef = ceiling(ours), ceiling(refs)
	if !bc.overload || res.CeilingOurs == 0 {
		return nil
	}
	n := 2 * res.CeilingOurs
	for i := range ours {
		if ours[i].Jobs == n {
			res.Overload = &ours[i]
			return nil
		}
	}
	logf("burst: overload: %d jobs, twice our ceiling", n)
	o, err := burstOurs(ctx, e, bc, n)
	if err != nil {
		return err
	}
	res.Overload = &o
	return nil
}

// startBurstEnv starts a cluster of replicas; tag names a further
// cluster's directory and profiles ("" for the steps' cluster).
func startBurstEnv(ctx context.Context, f flags, bins cluster.Binaries, replicas int, tag string) (*env, error) {
	logf("burst: starting 3 etcd members and %d replicas", replicas)
	dir := fmt.Sprintf("burst-%d", replicas)
	if tag != "" {
		dir = "burst-" + tag
	}
	e, err := startEnv(ctx, bins, filepath.Join(f.dir, dir),
		settings{SessionTTL: 5 * time.Second, MaxParallel: f.burst.maxParallel, Replicas: replicas, Fsync: f.burst.fsync}, func(string) []jobSpec { return nil })
	if err == nil && f.pprof {
		e.profileDir, e.profileTag, e.profileSeconds = f.dir, tag, f.pprofSeconds
	}
	return e, err
}

// ceiling is the largest N a side held.
func ceiling(sides []burstSide) int {
	out := 0
	for _, s := range sides {
		if s.held() {
			out = max(out, s.Jobs)
		}
	}
	return out
}

// burstJobs are n jobs due every second, named after their step, and
// with shards > 0 the step's sharded job (shardJob).
func burstJobs(step string, n, shards int) []jobSpec {
	jobs := make([]jobSpec, n)
	for i := range jobs {
		jobs[i] = jobSpec{Name: burstJobName(step, i), Schedule: "* * * * * *", DefaultDeadlines: true}
	}
	if shards > 0 {
		jobs = append(jobs, jobSpec{Name: shardJob(step), Schedule: "* * * * * *", DefaultDeadlines: true, Shards: shards})
	}
	return jobs
}

// burstJobName is the name of a step's i-th job, ours or the reference's:
// the tally counts the ticks of the names under the step's prefix.
func burstJobName(step string, i int) string { return fmt.Sprintf("%s%05d", step, i) }

// shardJob is the name of a step's sharded job: outside the step's prefix,
// so its shard runs are not counted as ticks of the step's jobs.
func shardJob(step string) string { return "s" + step + "shards" }

// burstOurs declares n burst jobs on e's replicas, measures after the
// warm-up, and removes them again (their runs drained, their records and
// cursors deleted).
func burstOurs(ctx context.Context, e *env, bc burstConfig, n int) (burstSide, error) {
	side := burstSide{Engine: "ours", Jobs: n, Procs: len(e.c.Replicas)}
	if err := e.freshWitness(ctx); err != nil {
		return side, err
	}
	e.settle(ctx, "burst")
	e.steps++
	step := fmt.Sprintf("b%d-", e.steps)
	logf("burst: ours, %d jobs every second, %d replicas: %s warm-up, %s window", n, side.Procs, bc.warmup, bc.window)
	if bc.history {
		seeded, err := e.seedHistory(ctx, step, n, time.Now())
		if err != nil {
			return side, err
		}
		side.SeededRecords = seeded
		logf("burst: ours, %d records seeded: every job's history full", seeded)
	}
	if err := e.reload(ctx, burstJobs(step, n, bc.shards)); err != nil {
		return side, err
	}
	// The jobs are removed and their runs drained before the undelivered
	// ticks are looked up (burstrecords.go): ticking on past capacity
	// while the lookups read, they tipped etcd over (4,000 jobs with full
	// histories: sessions lost two minutes after the grace, 1.8 million
	// keys after five).
	removed := sync.OnceValue(func() bool {
		if err := e.reload(ctx, nil); err != nil {
			return false
		}
		e.drain(ctx)
		return true
	})
	defer func() {
		if removed() {
			e.forget(ctx)
		}
	}()
	if err := sleepUntil(ctx, time.Now().Add(bc.warmup)); err != nil {
		return side, err
	}
	w, profiled := e.burstWindow(ctx, bc, step, n)
	defer profiled()
	err := measureBurst(ctx, e, &side, w)
	if err == nil && side.undelivered != nil && removed() {
		side.Records, side.NoRecord, err = e.recordsOf(ctx, side.undelivered, side.queued)
	}
	logBurstSide(side)
	return side, err
}

// burstWindow is what a step of ours measures over its window: the
// replicas' processes and metrics, the step's jobs; with -pprof, the
// replicas' and etcd's CPU over 10 s of it (profiled waits for the
// profiles).
func (e *env) burstWindow(ctx context.Context, bc burstConfig, step string, n int) (w burstWindow, profiled func()) {
	var procs []int
	for _, r := range e.c.Replicas {
		procs = append(procs, r.Pid())
	}
	w = burstWindow{procs: procs, replicaURL: e.replicaMetricURLs(), jobPrefix: step, window: bc.window, grace: bc.grace}
	if bc.shards > 0 {
		w.shardJob = shardJob(step)
	}
	profiled = func() {}
	if e.profileDir != "" {
		name := fmt.Sprintf("burst-%d", n)
		if e.profileTag != "" {
			name += "-" + e.profileTag // a step of -replicas 3,5 beyond the first count
		}
		w.atStart, profiled = profileAtStart(func() { saveProfiles(ctx, e, e.profileDir, name) })
	}
	return w, profiled
}

// burstReference runs the reference's processes with n jobs on e's etcd
// (the replicas idle, with no job) and measures them as burstOurs does.
func burstReference(ctx context.Context, e *env, bc burstConfig, n int) (burstSide, error) {
	side := burstSide{Engine: "reference", Jobs: n, Procs: refProcsCount}
	if err := e.freshWitness(ctx); err != nil {
		return side, err
	}
	e.settle(ctx, "burst")
	e.steps++
	step := fmt.Sprintf("bref%d-", e.steps)
	logf("burst: reference, %d jobs every second, %d processes", n, side.Procs)
	procs, err := startReference(ctx, e, n, refProcsCount, step)
	if err != nil {
		return side, err
	}
	defer e.forgetReference(ctx)
	defer procs.stop()
	if err := sleepUntil(ctx, time.Now().Add(bc.warmup)); err != nil {
		return side, err
	}
	w := burstWindow{procs: procs.pids(), jobPrefix: step, window: bc.window, grace: bc.grace}
	if e.profileDir != "" {
		// etcd's CPU over 10 s of the window, as for ours.
		var wait func()
		w.atStart, wait = profileAtStart(func() {
			saveEtcdProfiles(ctx, e, filepath.Join(e.profileDir, "profiles"), fmt.Sprintf("burst-%d-reference", n))
		})
		defer wait()
	}
	err = measureBurst(ctx, e, &side, w)
	logBurstSide(side)
	return side, err
}

// freshWitness compacts etcd and gives the step a witness of its own: a
// burst step's thousands of runs a second would otherwise pile up in one
// witness over the whole scenario. The step's config names the new one.
func (e *env) freshWitness(ctx context.Context) error {
	if err := e.compact(ctx); err != nil {
		return err
	}
	w, err := cluster.StartWitness(cluster.WitnessOptions{})
	if err != nil {
		return err
	}
	e.w.Close()
	e.w = w
	return nil
}

// profileAtStart is a window's atStart that runs save (a profile of the
// window's first seconds) beside the step, and a wait for it: nothing to
// wait for when the window never started. Started at the window, not
// before, a profile leaves out the bench's own reads of the replicas'
// metrics just before it (at 1,000 jobs 7-12 % of a merged replica profile).
func profileAtStart(save func()) (atStart, wait func()) {
	done := make(chan struct{})
	started := false
	atStart = func() {
		started = true
		go func() { defer close(done); save() }()
	}
	return atStart, func() {
		if started {
			<-done
		}
	}
}
