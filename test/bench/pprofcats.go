package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// categoriesCommand is the first argument that makes the bench break CPU
// profiles into the stages of a run (docs/performance-profiles.md):
// `go run ./test/bench categories FILE...`.
const categoriesCommand = "categories"

// cpuCategory is a stage of a run, known by the functions on its stacks.
type cpuCategory struct {
	name string
	rx   *regexp.Regexp
}

// cpuCategories: a stack belongs to the first whose pattern matches any
// of its frames, so the specific stages come before the transport and
// runtime ones they call.
var cpuCategories = []cpuCategory{
	{"garbage collection", regexp.MustCompile(`runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssist|markroot|gcDrain)`)},
	{"metrics scrape (the bench's)", regexp.MustCompile(`promhttp|prometheus\.\(\*Registry\)\.Gather|expfmt`)},
	{"metrics, per run", regexp.MustCompile(`prometheus`)},
	{"tracing", regexp.MustCompile(`opentelemetry|internal/tracing`)},
	{"logging", regexp.MustCompile(`log/slog|internal/logging`)},
	{"target call (HTTP)", regexp.MustCompile(`internal/target|net/http\.|net/textproto`)},
	{"watch decoding (mirrors)", regexp.MustCompile(`internal/mirror|client/v3\.\(\*watch|WatchResponse`)},
	{"record encoding", regexp.MustCompile(`internal/runs\.|encoding/json`)},
	{"claims, starts, releases", regexp.MustCompile(`internal/jobs/assign|internal/slots|internal/txnbatch`)},
	{"spec resolution", regexp.MustCompile(`scheduler/config|internal/schedule|jobs/admission|jobs/leader\.\(\*specCollector`)},
	{"leader pass (assign, resolve)", regexp.MustCompile(`jobs/leader`)},
	{"worker bookkeeping", regexp.MustCompile(`jobs/worker`)},
	{"gRPC transport (etcd client)", regexp.MustCompile(`google\.golang\.org/grpc|golang\.org/x/net/http2|google\.golang\.org/protobuf|etcd/client|etcd/api`)},
	{"timers", regexp.MustCompile(`runtime\.(runTimer|checkTimers|\(\*timer\))|clockwork`)},
	{"syscalls and netpoll", regexp.MustCompile(`syscall|netpoll|internal/poll`)},
	{"goroutine scheduling", regexp.MustCompile(`runtime\.(schedule|findRunnable|park_m|mcall|newproc|gopark|ready|wakep|stealWork)`)},
}

const otherCategory = "other (runtime, allocation)"

// categories prints, for each profile, its CPU by category.
func categories(files []string, out io.Writer) error {
	if len(files) == 0 {
		return fmt.Errorf("%s: name one or more CPU profiles", categoriesCommand)
	}
	for _, f := range files {
		text, err := exec.Command("go", "tool", "pprof", "-traces", f).Output()
		if err != nil {
			return fmt.Errorf("%s: go tool pprof -traces %s: %w", categoriesCommand, f, err)
		}
		by, total := categorize(string(text))
		fmt.Fprintf(out, "%s: %v sampled\n", f, total)
		names := make([]string, 0, len(by))
		for n := range by {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int { return int(by[b] - by[a]) })
		for _, n := range names {
			fmt.Fprintf(out, "  %-32s %8v %5.1f%%\n", n, by[n], 100*float64(by[n])/float64(total))
		}
	}
	return nil
}

// categorize sums the samples of `go tool pprof -traces` output by
// category: each trace is a line of dashes, then its value and leaf frame
// on one line, then the callers, a frame a line.
func categorize(traces string) (map[string]time.Duration, time.Duration) {
	by := map[string]time.Duration{}
	var total time.Duration
	for _, block := range strings.Split(traces, "-----------+")[1:] {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 {
			continue
		}
		first := strings.Fields(lines[1])
		if len(first) < 2 {
			continue
		}
		v, err := time.ParseDuration(first[0]) // pprof prints "10ms", "1.20s", "500us"
		if err != nil {
			continue
		}
		stack := strings.Join(first[1:], " ") + "\n" + strings.Join(lines[2:], "\n")
		name := otherCategory
		for _, c := range cpuCategories {
			if c.rx.MatchString(stack) {
				name = c.name
				break
			}
		}
		by[name] += v
		total += v
	}
	return by, total
}

func runCategories(args []string) {
	if err := categories(args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
