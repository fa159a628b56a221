package target

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/config"
)

// helperEnv makes the test binary act as a target program instead of
// running tests, so tests control exactly what a process writes.
const helperEnv = "TARGET_TEST_HELPER"

func TestMain(m *testing.M) {
	// As in the scheduler's main: the Executors of these tests re-execute
	// this test binary as their runs' supervisor.
	if code, ok := Supervise(os.Args); ok {
		os.Exit(code)
	}
	switch os.Getenv(helperEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "write":
		n, _ := strconv.Atoi(os.Getenv("TARGET_TEST_BYTES"))
		if err := writePattern(os.Stdout, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	case "replica":
		os.Exit(actAsReplica())
	default:
		os.Exit(3)
	}
}

// pattern is the byte at offset i of a helper's output. Its period, 251, is
// prime and so never lines up with the 4 KiB tail or the ring's wrap point:
// a tail with bytes out of order or misplaced cannot match by accident.
func pattern(i int) byte { return byte(i % 251) }

func writePattern(f *os.File, n int) error {
	// A block whose length is a multiple of the period repeats seamlessly.
	block := make([]byte, 251*256)
	for i := range block {
		block[i] = pattern(i)
	}
	for n > 0 {
		k, err := f.Write(block[:min(n, len(block))])
		if err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func patternTail(total, n int) []byte {
	out := make([]byte, 0, n)
	for i := total - n; i < total; i++ {
		out = append(out, pattern(i))
	}
	return out
}

func testExecutor(t *testing.T) *Executor {
	t.Helper()
	e, err := NewExecutor(Options{}.Discover(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.supervisor == "" {
		t.Fatal("exec runs of the tests would not go through a supervisor")
	}
	return e
}

func testRun() Run {
	return Run{
		Job:          "nightly-report",
		RunID:        "nightly-report@2026-11-22T01:00:00.123456789Z",
		Attempt:      1,
		ScheduledAt:  time.Date(2026, 11, 22, 2, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		Slot:         2,
		FencingToken: 7340032,
		Holder:       "replica-a",
	}
}

// wantFields is what testRun must look like to a target.
var wantFields = map[string]string{
	"JOB":           "nightly-report",
	"RUN_ID":        "nightly-report@2026-11-22T01:00:00.123456789Z",
	"ATTEMPT":       "1",
	"SCHEDULED_AT":  "2026-11-22T01:00:00.123456789Z",
	"SLOT":          "2",
	"FENCING_TOKEN": "7340032",
	"HOLDER":        "replica-a",
}

func execJob(timeout time.Duration, grace time.Duration, command ...string) *config.Job {
	return &config.Job{
		Name:    "nightly-report",
		Timeout: config.Duration(timeout),
		Exec:    &config.Exec{Command: command, KillGrace: config.Duration(grace)},
	}
}

// groupProc is one process of a process group, read straight from
// /proc/*/stat, independently of the package's own scan.
type groupProc struct {
	name, state, ppid string // name: "pid (comm)"
}

// groupProcs lists the processes of group pgid, zombies included: a zombie
// still holds the group id.
func groupProcs(t *testing.T, pgid int) []groupProc {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var procs []groupProc
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		end := strings.LastIndex(s, ")") + 1
		rest := strings.Fields(s[end:])
		if len(rest) >= 3 && rest[2] == strconv.Itoa(pgid) {
			procs = append(procs, groupProc{name: s[:end], state: rest[0], ppid: rest[1]})
		}
	}
	return procs
}

// liveInGroup lists the processes of group pgid that are not zombies.
func liveInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	var live []string
	for _, p := range groupProcs(t, pgid) {
		if p.state != "Z" {
			live = append(live, p.name+" "+p.state)
		}
	}
	return live
}
