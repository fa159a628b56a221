package target

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// heartbeat is a command that proves it runs: its group's leader records
// the group id, then a child of it rewrites a file ten times a second. The
// child, not the leader, beats: Pdeathsig alone would take the leader.
const heartbeat = `echo $$ > "$PGID_FILE"
sh -c 'while :; do date +%s%N > "$HEARTBEAT"; sleep 0.1; done' &
wait`

// actAsReplica is the test binary standing in for a replica: it runs the
// heartbeat through a real Executor (so through a supervisor, this binary
// again) until it is killed.
func actAsReplica() int {
	dir := os.Getenv("TARGET_TEST_DIR")
	job := execJob(time.Hour, 10*time.Second, "sh", "-c", heartbeat)
	job.Exec.Env = map[string]string{
		"HEARTBEAT": filepath.Join(dir, "heartbeat"),
		"PGID_FILE": filepath.Join(dir, "pgid"),
	}
	e, err := NewExecutor(Options{}.Discover(true))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 3
	}
	defer e.Close()
	if e.supervisor == "" {
		fmt.Fprintln(os.Stderr, "replica: no supervisor")
		return 3
	}
	res := e.Execute(context.Background(), job, testRun())
	fmt.Fprintf(os.Stderr, "replica: run ended before the replica was killed: %+v\n", res)
	return 4
}

// TestReplicaKilledTakesItsRunWithIt: a replica killed with SIGKILL in the
// middle of an exec run (the case of docs/design-edges.md#operating-at-the-edges) leaves nothing of the
// run behind: within 1s of the kill the heartbeat has stopped and no
// process of the run's group exists, zombies included.
func TestReplicaKilledTakesItsRunWithIt(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "replica.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	replica := exec.Command(self)
	replica.Env = append(os.Environ(), helperEnv+"=replica", "TARGET_TEST_DIR="+dir)
	replica.Stdout, replica.Stderr = logFile, logFile
	if err := replica.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = replica.Wait()
	}()
	t.Cleanup(func() {
		_ = replica.Process.Kill()
		<-exited
	})

	hbFile := filepath.Join(dir, "heartbeat")
	var pgid int
	poll.Until(t, 20*time.Second, "the run to beat", func() (bool, string) {
		b, err := os.ReadFile(filepath.Join(dir, "pgid"))
		if err != nil {
			return false, logOf(logFile)
		}
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		_, err = os.Stat(hbFile)
		return err == nil && pgid > 0, fmt.Sprint(err)
	})

	if err := replica.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deadline := killed.Add(time.Second)
	poll.Until(t, time.Until(deadline), "the run's process group to be gone", func() (bool, string) {
		err := syscall.Kill(-pgid, 0)
		return err == syscall.ESRCH, fmt.Sprintf("kill(-%d, 0) = %v, members: %q", pgid, err, membersOf(t, pgid))
	})
	gone := time.Since(killed)
	fi, err := os.Stat(hbFile)
	if err != nil {
		t.Fatal(err)
	}
	// With the group gone nothing can write the heartbeat any more, so
	// its last modification is when it stopped.
	if last := fi.ModTime(); last.After(deadline) {
		t.Errorf("heartbeat last written %v after the replica was killed, want within 1s", last.Sub(killed))
	}
	t.Logf("process group %d gone %v after the replica was killed", pgid, gone)

	if parent, err := cgroupParent(); err == nil {
		prefix := filepath.Join(parent, fmt.Sprintf("scheduler-run-%d-", replica.Process.Pid))
		poll.Until(t, 5*time.Second, "the run's cgroup to be removed", func() (bool, string) {
			left, _ := filepath.Glob(prefix + "*")
			return len(left) == 0, fmt.Sprint(left)
		})
	}
	<-exited
}

// membersOf lists the processes of group pgid with their state and
// parent, zombies included.
func membersOf(t *testing.T, pgid int) []string {
	t.Helper()
	var members []string
	for _, p := range groupProcs(t, pgid) {
		members = append(members, p.name+" "+p.state+" ppid "+p.ppid)
	}
	return members
}

func logOf(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

// TestExecUnsupervised: a binary that does not call Supervise still runs
// exec jobs, started from the replica itself, with the same results.
func TestExecUnsupervised(t *testing.T) {
	e := testExecutor(t)
	e.supervisor = ""
	res := e.Execute(t.Context(), execJob(20*time.Second, 0, "sh", "-c", "echo partial; exit 3"), testRun())
	if res.Outcome != runs.Failed || res.ExitCode == nil || *res.ExitCode != 3 || res.Output != "partial\n" {
		t.Errorf("result = %+v, want failed with exit code 3 and the output", res)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res = e.Execute(ctx, execJob(20*time.Second, 5*time.Second, "sleep", "1000"), testRun())
	if res.Outcome != runs.Cancelled {
		t.Errorf("result = %+v, want cancelled", res)
	}
}

// recorder keeps the log records an Executor writes, one line each.
type recorder struct {
	mu    *sync.Mutex
	recs  *[]string
	attrs string
}

func newRecorder() *recorder { return &recorder{mu: new(sync.Mutex), recs: new([]string)} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message + r.attrs
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.recs = append(*r.recs, line)
	return nil
}
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	for _, a := range as {
		c.attrs += " " + a.String()
	}
	return &c
}
func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), *r.recs...)
}

// TestSupervisorLogsReachTheReplica: what the supervisor logs (here, that
// the group ignored SIGTERM) is logged by the replica, with the run's
// attributes, not written into the run's output.
func TestSupervisorLogsReachTheReplica(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	e, err := NewExecutor(Options{Logger: slog.New(rec)}.Discover(true))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	job := execJob(time.Minute, 100*time.Millisecond, "sh", "-c", `trap "" TERM; echo > "$0/ready"; exec sleep 1000`, dir)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- e.Execute(ctx, job, testRun()) }()
	poll.For(t, 20*time.Second, "the command to ignore TERM", func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	})
	cancel()
	if res := <-done; res.Outcome != runs.Cancelled || res.Output != "" {
		t.Errorf("result = %+v, want cancelled with no output", res)
	}
	for _, l := range rec.lines() {
		if strings.Contains(l, "ignored SIGTERM") && strings.Contains(l, "run_id="+wantFields["RUN_ID"]) {
			return
		}
	}
	t.Errorf("no relayed record of the ignored SIGTERM among %q", rec.lines())
}
