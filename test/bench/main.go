// Command bench measures the scheduler on a real cluster on loopback: three
// etcd members and three replicas as separate processes, driven against a
// witness HTTP target. Every figure is printed beside a reference measured
// in the same run, since absolute times on a shared machine are noise.
//
//	go run ./test/bench                              # everything
//	go run ./test/bench -scenario throughput -jobs 500,1000 -duration 10s
//	go run ./test/bench -scenario scale -scale-jobs 10000 -json-only
//	go run ./test/bench -scenario cores -cores 1,2 -cores-jobs 1500
//	go run ./test/bench -scenario burst -burst-jobs 100,300 -warmup 2s -duration 4s
//	go run ./test/bench -scenario burst -burst-jobs 1000 -burst-shards 64  # a sharded job beside
//	go run ./test/bench -scenario leanfloor -leanfloor-runs 100,300 -duration 3s
//
// Scenarios: limit (raw etcd transactions), floor (what etcd spends on the
// fewest transactions the safety rules allow a run), leanfloor (the same for
// docs/protocol.md's designed fast path; not in "all"), throughput, lateness, failover,
// burst (every job due on the same second, beside bare reference processes),
// scale, cores (etcd pinned to 1, then 2 cores). One JSON object per
// scenario goes to stdout, then one for the goals (scenario "goals", with
// the header: command, commit, date, machine, load average); then, as
// markdown, the header, the goals table and the figures table. Progress
// goes to stderr. All traffic stays on 127.0.0.1 and every phase is
// bounded in time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

var logf = func(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

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
	logLevel  string
	timeout   time.Duration
	burst     burstConfig
	leanRuns  []int
	// leanHistory: records a job holds in the lean floor, a step each.
	leanHistory []int
	// schedulerAt: the replicas run cmd/scheduler as it was at this git
	// ref (cluster.BuildAt); the bench, its references and etcd stay this
	// commit's.
	schedulerAt string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == refWorkerCommand {
		if err := refWorker(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == categoriesCommand {
		runCategories(os.Args[2:])
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var f flags
	var l flagLists
	defineFlags(&f, &l)
	flag.Parse()
	if err := l.into(&f); err != nil {
		return err
	}
	want, err := scenarios(f.scenario)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	hdr := newHeader(ctx, time.Now(), loadAverage())

	dir, cleanup, err := workDir(f.dir, f.keep, minFree)
	if err != nil {
		return err
	}
	defer cleanup()
	f.dir = dir
	// The replicas inherit these.
	os.Setenv("SCHEDULER_LOG_LEVEL", f.logLevel)
	if f.pprof {
		os.Setenv("SCHEDULER_PPROF", "1")
		os.Setenv("ETCDNODE_PPROF", "1")
	}
	logf("building into %s (GOMAXPROCS %d, %d CPUs)", f.dir, runtime.GOMAXPROCS(0), runtime.NumCPU())
	if err := os.MkdirAll(filepath.Join(f.dir, "bin"), 0o755); err != nil {
		return err
	}
	bins, err := cluster.Build(ctx, filepath.Join(f.dir, "bin"))
	if err != nil {
		return err
	}
	if f.schedulerAt != "" {
		if bins.Scheduler, err = cluster.BuildAt(ctx, filepath.Join(f.dir, "bin"), f.schedulerAt); err != nil {
			return err
		}
		logf("replicas: cmd/scheduler at %s (%s)", f.schedulerAt, bins.Scheduler)
	}

	reports, err := runScenarios(ctx, f, bins, want)
	hdr.finish()
	printReports(hdr, reports, f.jsonOnly)
	return err
}

// flagLists are the flags given as comma lists, before they are parsed.
type flagLists struct {
	jobs, rates, scaleJobs, coreCounts, burstJobs, replicas, leanRuns, leanHistory string
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
	flag.StringVar(&l.leanRuns, "leanfloor-runs", "500,1000,2000,4000", "leanfloor: runs due each second, each a step")
	flag.StringVar(&l.leanHistory, "leanfloor-history", "0", "leanfloor: records each job holds from a step's start, kept so by a range delete every 10 runs (a steady state's: 100, history_limit's default), each a step of its own at each -leanfloor-runs")
	flag.IntVar(&f.limitConc, "limit-conc", 32, "limit: transactions in flight per client")
	flag.BoolVar(&f.jsonOnly, "json-only", false, "print only the JSON objects")
	flag.StringVar(&f.dir, "dir", "", "work directory for binaries, data and logs (default: a temporary one)")
	flag.BoolVar(&f.keep, "keep", false, "keep the work directory")
	flag.StringVar(&f.schedulerAt, "scheduler-at", "", "run the replicas as cmd/scheduler was at this git ref (a hash, tag or branch); the bench and its references stay this checkout's: two engines measured against one reference")
	flag.BoolVar(&f.pprof, "pprof", false, "save CPU and heap profiles of the leader into the work directory")
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

// runScenarios runs the scenarios wanted, printing each report as JSON as
// it comes, and returns the reports and the scenarios' errors.
func runScenarios(ctx context.Context, f flags, bins cluster.Binaries, want map[string]bool) ([]report, error) {
	var reports []report
	emit := func(r report) {
		reports = append(reports, r)
		if err := printJSON(os.Stdout, r); err != nil {
			logf("json: %v", err)
		}
	}
	var errs []error
	if want["limit"] || want["floor"] || want["leanfloor"] || want["throughput"] || want["lateness"] || want["failover"] {
		if err := mainCluster(ctx, f, bins, want, emit); err != nil {
			errs = append(errs, err)
		}
	}
	if want["burst"] {
		r, err := burst(ctx, f, bins)
		if err != nil {
			errs = append(errs, fmt.Errorf("burst: %w", err))
		}
		if len(r.Steps) > 0 {
			emit(report{Scenario: "burst", Data: r, Rows: r.rows()})
		}
	}
	if want["cores"] {
		r, err := cores(ctx, f, bins)
		if err != nil {
			errs = append(errs, fmt.Errorf("cores: %w", err))
		} else {
			emit(r)
		}
	}
	if want["scale"] {
		for _, n := range f.scaleJobs {
			r, err := scale(ctx, f, bins, n)
			if err != nil {
				errs = append(errs, fmt.Errorf("scale %d: %w", n, err))
				continue
			}
			emit(r)
		}
	}
	return reports, errors.Join(errs...)
}

// printReports prints the goals as JSON, then, unless jsonOnly, the header,
// the goals and every figure as tables.
func printReports(hdr header, reports []report, jsonOnly bool) {
	goals := evaluate(reports)
	if err := printJSON(os.Stdout, report{Scenario: "goals", Data: goalsResult{Header: hdr, Goals: goals}}); err != nil {
		logf("json: %v", err)
	}
	if !jsonOnly {
		fmt.Println()
		hdr.print(os.Stdout)
		fmt.Println()
		printGoals(os.Stdout, goals)
		fmt.Println()
		printTable(os.Stdout, reports)
		printBurst(os.Stdout, reports)
		printLeanFloor(os.Stdout, reports)
	}
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

// machine describes where the numbers come from.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs (allowed: %s), %s/%s, %s", model, runtime.NumCPU(), cpusAllowed(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// loadAverage is the 1, 5 and 15 minute load average: the machine is
// shared, and a run's figures say how busy it was.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// minFree is the disk space a bench run wants before it starts: its etcd
// members and replicas write up to about a GiB a step, which -keep leaves.
// With the disk full, etcd's writes fail and a run's failures (leases not
// granted, replicas gone, 503s) look like the scheduler's.
const minFree = 4 << 30

// workDir is the run's work directory: dir, made if it is not yet, or a
// new temporary one (removed by cleanup unless keep); an error when its
// disk has less than need free.
func workDir(dir string, keep bool, need uint64) (string, func(), error) {
	cleanup := func() {}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "bench-"); err != nil {
			return "", nil, err
		}
		if !keep {
			cleanup = func() { os.RemoveAll(dir) }
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := freeSpace(dir, need); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// freeSpace fails when the file system holding dir has less than need
// bytes free, saying how to make room.
func freeSpace(dir string, need uint64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("bench: free space under %s: %w", dir, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < need {
		return fmt.Errorf("bench: %.1f GiB free under %s, want %.1f: a run's etcd data and logs need room (remove old -keep directories)",
			float64(free)/(1<<30), dir, float64(need)/(1<<30))
	}
	return nil
}
