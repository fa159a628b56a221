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
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

var logf = func(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
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
