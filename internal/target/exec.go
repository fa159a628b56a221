package target

import (
	"context"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// drainDelay is how long output may keep arriving once the group is gone.
// Only a process that left the group (setsid) can still hold the pipe; its
// output is no longer the run's, and it must not keep the run open.
const drainDelay = 500 * time.Millisecond

// doExec runs the job's command in its own process group and waits until the
// whole group is gone, not just the process it started.
//
// Output goes to a pipe we read ourselves: with an *os.File as Stdout and
// Stderr, os/exec starts no copying goroutine and its Wait does not wait for
// the pipe to close, so a grandchild holding stdout open cannot stall the
// run. Both streams share the pipe, which keeps their interleaving.
func (e *Executor) doExec(ctx context.Context, spec *config.Exec, run Run) Result {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return failed("target: exec: empty command")
	}
	if ctx.Err() != nil {
		return stopped(ctx)
	}
	grace := spec.KillGrace.D()
	if grace <= 0 {
		grace = e.killGrace
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return failed("target: exec: output pipe: %v", err)
	}
	// exec.Command, not CommandContext: cancelling means signalling the
	// group with a grace period, which CommandContext cannot express.
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Env = execEnv(spec.Env, run)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	// From here only the children hold the write end, so EOF on the read
	// end means every one of them has closed it.
	pw.Close()
	if err != nil {
		pr.Close()
		return failed("target: exec: %v", err)
	}

	out := newTailBuffer(runs.OutputLimit)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, pr) // ends at EOF, or when we close pr
	}()
	var reap func() error
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		reap = waitExit(cmd)
	}()

	g := group{pgid: cmd.Process.Pid, log: e.log.With("job", run.Job, "run_id", run.RunID)}
	var res Result
	select {
	case <-exited:
	case <-ctx.Done():
		res = stopped(ctx)
		g.stop(grace)
		<-exited
	}
	// Whatever the leader left behind would go on running outside the slot.
	g.stop(grace)
	_ = reap() // the outcome comes from ProcessState; the error says no more

	drain := time.NewTimer(drainDelay)
	select {
	case <-copied:
	case <-drain.C:
		pr.Close()
		<-copied
	}
	drain.Stop()
	pr.Close()

	if res.Outcome == "" {
		res = exitResult(cmd.ProcessState)
	} else if st := cmd.ProcessState; st != nil && st.Exited() {
		code := st.ExitCode()
		res.ExitCode = &code
	}
	res.Output = out.String()
	return res
}

// exitResult maps how the leader ended by itself: exit 0 succeeds; any other
// exit fails with its code; a signal (a crash, the OOM killer) fails with no
// code, since there is none, and names the signal.
func exitResult(st *os.ProcessState) Result {
	if st == nil {
		return failed("target: exec: no exit status")
	}
	if !st.Exited() {
		return failed("target: exec: %v", st)
	}
	code := st.ExitCode()
	res := Result{Outcome: runs.Succeeded, ExitCode: &code}
	if code != 0 {
		res.Outcome = runs.Failed
		res.Error = "target: exec: " + st.String()
	}
	return res
}
