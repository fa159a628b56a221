package target

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// drainDelay is how long output may keep arriving once the group is gone.
// Only a process that left the group (setsid) and, without a run cgroup,
// survived can still hold the pipe; its output is no longer the run's, and
// it must not keep the run open.
const drainDelay = 500 * time.Millisecond

// runSeq numbers run cgroups within this process; with the pid it makes
// their names unique among the replicas sharing a parent cgroup.
var runSeq atomic.Uint64

// running is an exec run's command, started through a supervisor or, for a
// binary that cannot supervise, by this process.
type running interface {
	stop() // SIGTERM to the group, SIGKILL after the grace
	done() <-chan struct{}
	result() (status, error) // once done
}

// doExec runs the job's command in its own process group and waits until the
// whole group is gone, not just the process it started.
//
// Output goes to a pipe we read ourselves: with an *os.File as Stdout and
// Stderr, os/exec starts no copying goroutine and its Wait does not wait for
// the pipe to close, so a grandchild holding stdout open cannot stall the
// run. Both streams share the pipe, which keeps their interleaving. The
// supervisor passes the pipe on to the command, so output never goes
// through it.
func (e *Executor) doExec(ctx context.Context, spec *config.Exec, run Run) Result {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return failed("target: exec: empty command")
	}
	if ctx.Err() != nil {
		return stopped(ctx)
	}
	sp, err := e.execSpec(spec, run)
	if err != nil {
		return failed("target: exec: %v", err)
	}

	r, pr, err := e.startExec(ctx, sp, run)
	if err != nil {
		return failed("target: exec: %v", err)
	}

	out := newTailBuffer(runs.OutputLimit)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = copyOut(out, pr) // ends at EOF, or when we close pr
	}()

	var res Result
	select {
	case <-r.done():
	case <-ctx.Done():
		res = stopped(ctx)
		r.stop()
		<-r.done()
	}
	st, err := r.result()

	drain := time.NewTimer(drainDelay)
	select {
	case <-copied:
	case <-drain.C:
		pr.Close()
		<-copied
	}
	drain.Stop()
	pr.Close()

	res = execResult(res, st, err)
	res.Output = out.String()
	return res
}

// startExec starts the command of sp, under the supervisor if there is
// one, with its output into a pipe; it returns the pipe's read end.
func (e *Executor) startExec(ctx context.Context, sp spec, run Run) (running, *os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("output pipe: %w", err)
	}
	log := e.log.With("job", run.Job, "run_id", run.RunID)
	var r running
	if e.supervisor != "" {
		r, err = startSupervised(context.WithoutCancel(ctx), e.supervisor, sp, pw, log)
	} else {
		r, err = startLocal(sp, pw, log)
	}
	// From here only the children hold the write end, so EOF on the read
	// end means every one of them has closed it.
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, nil, err
	}
	return r, pr, nil
}

// execResult is how a run ended: res is stopped's when its context ended
// it (empty otherwise), st and err what the command's end reported.
func execResult(res Result, st status, err error) Result {
	switch {
	case err != nil && res.Outcome == "":
		return failed("target: exec: %v", err)
	case err != nil:
	case res.Outcome == "":
		return exitResult(st)
	case st.Exited:
		code := st.Code
		res.ExitCode = &code
	}
	return res
}

// execSpec decides everything about the run's command before it starts.
func (e *Executor) execSpec(ex *config.Exec, run Run) (spec, error) {
	grace := ex.KillGrace.D()
	if grace <= 0 {
		grace = defaultKillGrace
	}
	// exec.Command resolves the name with the scheduler's PATH, as it
	// always has; the supervisor gets the result and resolves nothing.
	c := exec.Command(ex.Command[0], ex.Command[1:]...)
	if c.Err != nil {
		return spec{}, c.Err
	}
	sp := spec{Path: c.Path, Args: c.Args, Env: execEnv(ex.Env, run), Dir: ex.Dir, Grace: grace}
	if e.cgroupDir != "" {
		sp.Cgroup = filepath.Join(e.cgroupDir, fmt.Sprintf("scheduler-run-%d-%d", os.Getpid(), runSeq.Add(1)))
	}
	return sp, nil
}

// exitResult maps how the leader ended by itself: exit 0 succeeds; any other
// exit fails with its code; a signal (a crash, the OOM killer) fails with no
// code, since there is none, and names the signal.
func exitResult(st status) Result {
	if !st.Exited {
		return failed("target: exec: %s", st.Desc)
	}
	code := st.Code
	res := Result{Outcome: runs.Succeeded, ExitCode: &code}
	if code != 0 {
		res.Outcome = runs.Failed
		res.Error = "target: exec: " + st.Desc
	}
	return res
}
