package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

func TestExecEnvAndDir(t *testing.T) {
	// Secrets in the scheduler's own environment must not reach the job.
	t.Setenv("ETCD_PASSWORD", "hunter2")
	t.Setenv("SCHEDULER_ETCD_PASSWORD", "hunter2")
	t.Setenv("HOME", "/home/scheduler")
	job := execJob(20*time.Second, 0, "env")
	job.Exec.Env = map[string]string{"MODE": "full", "SCHEDULER_FENCING_TOKEN": "999999999"}

	res := testExecutor(t).Execute(t.Context(), job, testRun())
	if res.Outcome != runs.Succeeded || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("result = %+v, want succeeded with exit code 0", res)
	}
	env := map[string]string{}
	for line := range strings.Lines(res.Output) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		env[k] = v
	}
	for k, want := range wantFields {
		if got := env["SCHEDULER_"+k]; got != want {
			t.Errorf("SCHEDULER_%s = %q, want %q", k, got, want)
		}
	}
	if env["MODE"] != "full" || env["HOME"] != "/home/scheduler" || env["PATH"] == "" {
		t.Errorf("MODE=%q HOME=%q PATH=%q, want the job's env over the base", env["MODE"], env["HOME"], env["PATH"])
	}
	for k := range env {
		_, runField := wantFields[strings.TrimPrefix(k, "SCHEDULER_")]
		if !slices.Contains(baseEnv, k) && k != "MODE" && !(strings.HasPrefix(k, "SCHEDULER_") && runField) {
			t.Errorf("job sees %s from the scheduler's environment", k)
		}
	}

	dir := t.TempDir()
	job = execJob(20*time.Second, 0, "pwd")
	job.Exec.Dir = dir
	res = testExecutor(t).Execute(t.Context(), job, testRun())
	want, _ := filepath.EvalSymlinks(dir)
	if res.Outcome != runs.Succeeded || strings.TrimSpace(res.Output) != want {
		t.Errorf("pwd: %+v, want %q", res, want)
	}
}

func TestExecOutcomes(t *testing.T) {
	code := func(c int) *int { return &c }
	tests := []struct {
		name     string
		command  []string
		want     runs.Outcome
		exitCode *int
		errHas   string
		output   string
	}{
		{"exit 0", []string{"true"}, runs.Succeeded, code(0), "", ""},
		{"exit 3", []string{"sh", "-c", "echo partial; exit 3"}, runs.Failed, code(3), "exit status 3", "partial\n"},
		{"killed by signal", []string{"sh", "-c", "kill -KILL $$"}, runs.Failed, nil, "signal: killed", ""},
		{"not found", []string{"/nonexistent/report"}, runs.Failed, nil, "no such file", ""},
		{"empty command", nil, runs.Failed, nil, "empty command", ""},
		// No shell unless the command names one: $HOME and ; stay literal.
		{"no shell", []string{"echo", "$HOME;", "exit 3"}, runs.Succeeded, code(0), "", "$HOME; exit 3\n"},
		{"stdout and stderr together", []string{"sh", "-c", "echo out; echo err >&2; echo out2"},
			runs.Succeeded, code(0), "", "out\nerr\nout2\n"},
	}
	e := testExecutor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.Execute(t.Context(), execJob(20*time.Second, 0, tt.command...), testRun())
			if res.Outcome != tt.want || !strings.Contains(res.Error, tt.errHas) || res.Output != tt.output {
				t.Errorf("result = %+v, want %s, error with %q, output %q", res, tt.want, tt.errHas, tt.output)
			}
			if (res.ExitCode == nil) != (tt.exitCode == nil) || res.ExitCode != nil && *res.ExitCode != *tt.exitCode {
				t.Errorf("exit code = %v, want %v", ptrString(res.ExitCode), ptrString(tt.exitCode))
			}
		})
	}
}

func ptrString(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

func TestExecTimesOut(t *testing.T) {
	start := time.Now()
	res := testExecutor(t).Execute(t.Context(), execJob(200*time.Millisecond, 5*time.Second, "sleep", "1000"), testRun())
	if res.Outcome != runs.TimedOut || !strings.Contains(res.Error, "timed out after 200ms") || res.ExitCode != nil {
		t.Fatalf("result = %+v, want timed_out with no exit code", res)
	}
	// sleep dies on SIGTERM, so the 5s grace is never used up.
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("run took %v, want it to end soon after its 200ms timeout", took)
	}
}

// TestExecCancelKillsWholeGroup: a grandchild that ignores SIGTERM and holds
// stdout open. After cancel, Execute returns within grace + 1s and, by then,
// no process of the group is alive.
func TestExecCancelKillsWholeGroup(t *testing.T) {
	dir := t.TempDir()
	const grace = time.Second
	// $0 is the directory: the leader records its pid (= the group id), the
	// grandchild says it is ready once it ignores TERM.
	script := `echo $$ > "$0/pgid"
sh -c 'trap "" TERM; echo > "$0/ready"; exec sleep 1000' "$0" &
sleep 1000`
	job := execJob(time.Minute, grace, "sh", "-c", script, dir)

	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	e := testExecutor(t)
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, job, testRun()) }()

	var pgid int
	poll.For(t, 30*time.Second, "the grandchild to ignore TERM", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pgid"))
		if err != nil {
			return false
		}
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		_, err = os.Stat(filepath.Join(dir, "ready"))
		return err == nil && len(liveInGroup(t, pgid)) >= 3
	})

	start := time.Now()
	cancel(errors.New("cancel requested through the API"))
	res := <-done
	took := time.Since(start)

	if live := liveInGroup(t, pgid); len(live) > 0 {
		t.Errorf("processes of group %d alive after Execute returned: %q", pgid, live)
	}
	if took > grace+time.Second {
		t.Errorf("Execute returned %v after cancel, want within grace (%v) + 1s", took, grace)
	}
	if took < grace {
		t.Errorf("Execute returned %v after cancel, before the grace (%v) a TERM-ignoring grandchild gets", took, grace)
	}
	if res.Outcome != runs.Cancelled || !strings.Contains(res.Error, "cancel requested through the API") {
		t.Errorf("result = %+v, want cancelled with the cause", res)
	}
}

// TestExecLeftoversDoNotOutliveRun: the command exits at once but leaves a
// background process that holds stdout. The run must neither hang on the pipe
// nor leave the process running outside its slot.
func TestExecLeftoversDoNotOutliveRun(t *testing.T) {
	job := execJob(time.Minute, 10*time.Second, "sh", "-c", "sleep 1000 & echo $$")
	start := time.Now()
	res := testExecutor(t).Execute(t.Context(), job, testRun())
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run took %v; a background sleep that dies on TERM should not hold it", took)
	}
	if res.Outcome != runs.Succeeded {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("output %q is not the leader's pid", res.Output)
	}
	if live := liveInGroup(t, pgid); len(live) > 0 {
		t.Errorf("processes of group %d alive after the run: %q", pgid, live)
	}
}

// TestExecLargeOutputBoundedMemory: a command writes 100 MiB; the run keeps
// exactly the last 4 KiB and allocates far less than the output. Buffering
// the whole output would allocate at least 100 MiB and fail the bound.
func TestExecLargeOutputBoundedMemory(t *testing.T) {
	const size = 100 << 20
	const bound = 8 << 20
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	job := execJob(time.Minute, 0, self)
	job.Exec.Env = map[string]string{helperEnv: "write", "TARGET_TEST_BYTES": strconv.Itoa(size)}
	e := testExecutor(t)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := e.Execute(t.Context(), job, testRun())
	runtime.ReadMemStats(&after)

	// Succeeded means the helper wrote all 100 MiB: a closed pipe would
	// have made it exit 2.
	if res.Outcome != runs.Succeeded {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	if want := string(patternTail(size, runs.OutputLimit)); res.Output != want {
		t.Errorf("output is %d bytes and not the last %d written", len(res.Output), runs.OutputLimit)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
		t.Errorf("allocated %d bytes while reading %d of output, want under %d", alloc, size, bound)
	} else {
		t.Logf("allocated %d bytes for %d bytes of output", alloc, size)
	}
}
