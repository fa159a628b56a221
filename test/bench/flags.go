package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// flags are the command line, parsed (defineFlags, flagLists.into).
type flags struct {
	scenario  string
	jobs      []int
	rates     []int
	scaleJobs []int
	cores     []int
	coresJobs int
	duration  time.Duration
	limitConc int
	jsonOnly  bool
	dir       string
	keep      bool
	pprof     bool
	// pprofSeconds: how long each CPU profile -pprof takes lasts.
	pprofSeconds int
	// mainFsync: the members of the cluster the limit, floor, leanfloor
	// and throughput scenarios share fsync their log.
	mainFsync bool
	logLevel  string
	timeout   time.Duration
	burst     burstConfig
	leanRuns  []int
	// leanHistory: records a job holds in the lean floor, a step each.
	leanHistory []int
	// leanSlots: whether the lean floor's runs hold a slot each, a step
	// each (true: the protocol's); leanWatch: whether its workers watch
	// as replicas do, a step each.
	leanSlots, leanWatch []bool
	// schedulerAt: the replicas run cmd/scheduler as it was at this git
	// ref (cluster.BuildAt); the bench, its references and etcd stay this
	// commit's.
	schedulerAt string
}

// flagLists are the flags given as comma lists, before they are parsed.
type flagLists struct {
	jobs, rates, scaleJobs, coreCounts, burstJobs, replicas, leanRuns, leanHistory, leanSlots, leanWatch string
}

// defineFlags declares the command line into f and l.
func defineFlags(f *flags, l *flagLists) {
	flag.StringVar(&f.scenario, "scenario", "all", "all, or a comma list of: limit, floor, leanfloor, throughput, lateness, failover, burst, scale, cores (all but leanfloor)")
	flag.StringVar(&l.jobs, "jobs", "500,1000,1250,1500,2000", "throughput: job counts, each a step (@every 1s jobs: runs/s offered)")
	flag.StringVar(&l.rates, "rates", "10,100,1000", "lateness: runs per second, each a step")
	flag.StringVar(&l.scaleJobs, "scale-jobs", "10000,100000", "scale: declared job counts, each its own cluster")
	flag.StringVar(&l.coreCounts, "cores", "1,2", "cores: how many cores the etcd members are pinned to (taskset), each a step")
	flag.IntVar(&f.coresJobs, "cores-jobs", 1500, "cores: jobs @every 1s of the throughput step run at each core count")
	flag.DurationVar(&f.duration, "duration", 20*time.Second, "measurement window of each step")
	flag.StringVar(&l.burstJobs, "burst-jobs", "500,1000,2000,4000,6000", "burst: jobs due every second, all on the same second, each a step (ours, then the reference)")
	flag.DurationVar(&f.burst.warmup, "warmup", 8*time.Second, "burst: warm-up of each step before its window")
	flag.DurationVar(&f.burst.grace, "burst-grace", 10*time.Second, "burst: how long after the window a tick due in it may still arrive and count as delivered")
	flag.StringVar(&l.replicas, "replicas", "3", "burst: scheduler replicas of the steps' cluster; further counts each run one step of 1000 jobs on a cluster of their own, in order (-replicas 3,5,3: issue 24's goal 6, each 5-replica step over the 3-replica steps beside it)")
	flag.IntVar(&f.burst.shards, "burst-shards", 0, "burst: a job of this many shards (1 to 256) due every second beside each step's jobs; its shard runs count as runs (0: none)")
	flag.BoolVar(&f.burst.fsync, "burst-fsync", true, "burst: the etcd members fsync their log, as production members (and the peer's measured ones) do; false: --unsafe-no-fsync, as the other scenarios")
	// 2048: above the runs due at once on a replica at 4,000 jobs (1,334
	// on 3), as docs/configuration.md sizes worker.max_parallel; the
	// places' cut keeps twice the ceiling from collapsing there.
	flag.IntVar(&f.burst.maxParallel, "burst-max-parallel", 2048, "burst: the replicas' worker.max_parallel")
	flag.BoolVar(&f.burst.history, "burst-history", true, "burst: ours' jobs start with history_limit records each, so the window pays the prune a steady state pays (false: new jobs, whose histories do not fill in a window)")
	flag.BoolVar(&f.burst.overload, "burst-overload", true, "burst: run a step at twice our ceiling (when it is not one of -burst-jobs)")
	flag.BoolVar(&f.mainFsync, "fsync", false, "the etcd members of the cluster limit, floor, leanfloor and throughput share fsync their log, as -burst-fsync's do (default: --unsafe-no-fsync); the kernel's work of a sync counts in etcd's CPU, and grows with the bytes written")
	flag.StringVar(&l.leanRuns, "leanfloor-runs", "500,1000,2000,4000", "leanfloor: runs due each second, each a step")
	flag.StringVar(&l.leanHistory, "leanfloor-history", "0", "leanfloor: records each job holds from a step's start, kept so by a range delete every 10 runs (a steady state's: 100, history_limit's default), each a step of its own at each -leanfloor-runs")
	flag.StringVar(&l.leanSlots, "leanfloor-slot", "with", "leanfloor: with (each run holds a slot of its own, as the protocol's), without (the chunk's marker the only hold: what the slot's four operations a run cost etcd), or with,without: a step each, alternating")
	flag.StringVar(&l.leanWatch, "leanfloor-watch", "without", "leanfloor: without (nothing watches), with (each worker's client follows the assignments, the claim markers and the jobs' state, as a replica does: what the watches cost etcd), or with,without: a step each")
	flag.IntVar(&f.limitConc, "limit-conc", 32, "limit: transactions in flight per client")
	flag.BoolVar(&f.jsonOnly, "json-only", false, "print only the JSON objects")
	flag.StringVar(&f.dir, "dir", "", "work directory for binaries, data and logs (default: a temporary one)")
	flag.BoolVar(&f.keep, "keep", false, "keep the work directory")
	flag.StringVar(&f.schedulerAt, "scheduler-at", "", "run the replicas as cmd/scheduler was at this git ref (a hash, tag or branch); the bench and its references stay this checkout's: two engines measured against one reference")
	flag.BoolVar(&f.pprof, "pprof", false, "save CPU and heap profiles of the leader into the work directory")
	flag.IntVar(&f.pprofSeconds, "pprof-seconds", defaultProfileSeconds, "pprof: how long each CPU profile lasts, from the window's start, at most -duration (a replica at a burst gives about 5 % of a core: 10 s is half a second of samples)")
	flag.StringVar(&f.logLevel, "log-level", "info", "the replicas' log level (SCHEDULER_LOG_LEVEL)")
	flag.DurationVar(&f.timeout, "timeout", 60*time.Minute, "stop everything after this long")
}

// into parses the lists into f and checks how the settings relate.
func (l flagLists) into(f *flags) error {
	var err error
	if f.jobs, err = ints(l.jobs); err != nil {
		return fmt.Errorf("-jobs: %w", err)
	}
	if f.rates, err = ints(l.rates); err != nil {
		return fmt.Errorf("-rates: %w", err)
	}
	if f.scaleJobs, err = ints(l.scaleJobs); err != nil {
		return fmt.Errorf("-scale-jobs: %w", err)
	}
	if f.cores, err = ints(l.coreCounts); err != nil {
		return fmt.Errorf("-cores: %w", err)
	}
	if f.burst.jobs, err = ints(l.burstJobs); err != nil {
		return fmt.Errorf("-burst-jobs: %w", err)
	}
	if f.leanRuns, err = ints(l.leanRuns); err != nil {
		return fmt.Errorf("-leanfloor-runs: %w", err)
	}
	if f.leanHistory, err = histories(l.leanHistory); err != nil {
		return fmt.Errorf("-leanfloor-history: %w", err)
	}
	if f.leanSlots, err = withOrWithout(l.leanSlots); err != nil {
		return fmt.Errorf("-leanfloor-slot: %w", err)
	}
	if f.leanWatch, err = withOrWithout(l.leanWatch); err != nil {
		return fmt.Errorf("-leanfloor-watch: %w", err)
	}
	if f.burst.replicas, err = ints(l.replicas); err != nil {
		return fmt.Errorf("-replicas: %w", err)
	}
	if len(f.burst.replicas) == 0 {
		return fmt.Errorf("-replicas %q: give a replica count, or several (3,5)", l.replicas)
	}
	f.burst.window = f.duration
	if f.burst.warmup <= 0 || f.burst.window < time.Second || f.burst.grace < 0 {
		return fmt.Errorf("burst: -warmup %s must be > 0, -duration %s at least 1s, -burst-grace %s not negative", f.burst.warmup, f.burst.window, f.burst.grace)
	}
	if f.pprof && (f.pprofSeconds < 1 || f.pprofSeconds > maxProfileSeconds || time.Duration(f.pprofSeconds)*time.Second > f.duration) {
		return fmt.Errorf("-pprof-seconds %d: want 1 to %d, and at most -duration %s (a profile longer than the window measures what follows it)", f.pprofSeconds, maxProfileSeconds, f.duration)
	}
	if f.burst.maxParallel < 1 {
		return fmt.Errorf("-burst-max-parallel: %d: want at least 1", f.burst.maxParallel)
	}
	if f.burst.shards < 0 || f.burst.shards > 256 {
		return fmt.Errorf("-burst-shards: %d: want 0 (none) to 256", f.burst.shards)
	}
	if f.coresJobs <= 0 {
		return fmt.Errorf("-cores-jobs: %d is not a positive number", f.coresJobs)
	}
	return nil
}

// scenarios is the set of scenarios list names ("all": every one but
// leanfloor).
func scenarios(list string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		switch s {
		case "all":
			for _, k := range []string{"limit", "floor", "throughput", "lateness", "failover", "burst", "scale", "cores"} {
				want[k] = true
			}
		case "limit", "floor", "leanfloor", "throughput", "lateness", "failover", "burst", "scale", "cores":
			want[s] = true
		default:
			return nil, fmt.Errorf("-scenario %q: unknown", s)
		}
	}

	return want, nil
}

// ints parses a comma list of positive numbers.
func ints(s string) ([]int, error) {
	return intsWithin(s, 1, math.MaxInt, "is not a positive number")
}

// histories parses a list of records held per job: 0 (none) to
// leanMaxSeed, at least one.
func histories(s string) ([]int, error) {
	out, err := intsWithin(s, 0, leanMaxSeed, fmt.Sprintf("is not a count of records a job holds, 0 to %d", leanMaxSeed))
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("%q: give at least one count (0: none)", s)
	}
	return out, err
}

// intsWithin parses a comma list of numbers in [lo, hi]; a number outside,
// or not a number, is named with what.
func intsWithin(s string, lo, hi int, what string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q %s", p, what)
		}
		out = append(out, n)
	}
	return out, nil
}

// withOrWithout parses a comma list of with and without.
func withOrWithout(s string) ([]bool, error) {
	var out []bool
	for _, m := range strings.Split(s, ",") {
		switch strings.TrimSpace(m) {
		case "with":
			out = append(out, true)
		case "without":
			out = append(out, false)
		default:
			return nil, fmt.Errorf("%q: give with, without, or both (with,without)", m)
		}
	}
	return out, nil
}
