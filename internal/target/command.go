package target

import (
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"
)

// spec is everything needed to start one exec run's command. doExec decides
// it; the command is started from it either by a supervisor process, to
// which it travels as JSON, or by this process when there is none.
type spec struct {
	Path  string        `json:"path"` // resolved by doExec with the scheduler's PATH, as before supervisors
	Args  []string      `json:"args"`
	Env   []string      `json:"env"`
	Dir   string        `json:"dir,omitempty"`
	Grace time.Duration `json:"grace"`
	// Cgroup is the run cgroup to create and start the command in; empty
	// where cgroups are not available.
	Cgroup string `json:"cgroup,omitempty"`
}

// status is how the command's leader ended.
type status struct {
	Exited bool   `json:"exited"` // by itself, with Code; false for a signal
	Code   int    `json:"code"`
	Desc   string `json:"desc"` // os.ProcessState's words: "exit status 3", "signal: killed"
}

func statusOf(st *os.ProcessState) status {
	if st == nil {
		return status{Desc: "no exit status"}
	}
	return status{Exited: st.Exited(), Code: st.ExitCode(), Desc: st.String()}
}

// command is a started exec run: its leader, its group, its cgroup.
type command struct {
	cmd    *exec.Cmd
	grace  time.Duration
	g      group
	cg     *runCgroup
	log    *slog.Logger
	exited chan struct{}
	reap   func() error // set before exited closes
}

// startCommand starts sp's command with out as its stdout and stderr.
// Failing to create its cgroup is logged, not fatal: the run loses only the
// protection from daemons, which is no reason to skip it.
func startCommand(sp spec, out *os.File, log *slog.Logger) (*command, error) {
	var cg *runCgroup
	if sp.Cgroup != "" {
		var err error
		if cg, err = newRunCgroup(sp.Cgroup); err != nil {
			log.Warn("exec run has no cgroup of its own: a daemon escaping its process group would outlive it", "err", err)
		}
	}
	cmd := &exec.Cmd{
		Path:        sp.Path,
		Args:        sp.Args,
		Env:         sp.Env,
		Dir:         sp.Dir,
		Stdout:      out,
		Stderr:      out,
		SysProcAttr: procAttr(cg.cgroupFD()),
	}
	c := &command{
		cmd:    cmd,
		grace:  sp.Grace,
		cg:     cg,
		log:    log,
		exited: make(chan struct{}),
	}
	started := make(chan error, 1)
	go func() {
		defer close(c.exited)
		// Pdeathsig fires when the thread that forked ends, not the
		// process, and Go ends a thread whose goroutine exits locked to
		// it. This goroutine holds the forking thread until the leader
		// exits, so no other goroutine can lock it and end it meanwhile.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			c.reap = waitExit(cmd)
		}
	}()
	if err := <-started; err != nil {
		if cerr := cg.end(); cerr != nil {
			log.Warn("end run cgroup", "err", cerr)
		}
		return nil, err
	}
	c.g = group{pgid: cmd.Process.Pid, log: log}
	return c, nil
}

// wait returns once the whole run is over: the leader exited, every process
// of its group gone, its cgroup emptied and removed. A closed stop asks for
// SIGTERM to the group and SIGKILL after the grace; a closed lost means the
// replica is gone, and the group is killed at once.
func (c *command) wait(stop, lost <-chan struct{}) status {
	select {
	case <-c.exited:
	case <-stop:
		c.g.stop(c.grace, lost)
	case <-lost:
	}
	// Whatever the leader left behind would go on running outside the slot.
	c.g.stop(c.grace, lost)
	<-c.exited
	// Signals to the group are over, so the leader's pid need not be held.
	_ = c.reap() // the outcome comes from ProcessState; the error says no more
	// What left the group (setsid) but not the cgroup dies only now, with
	// SIGKILL and no grace: it was never meant to outlive the run.
	if err := c.cg.end(); err != nil {
		c.log.Warn("end run cgroup", "err", err)
	}
	return statusOf(c.cmd.ProcessState)
}

// localRun is a command started by this process, for a binary that cannot
// act as a supervisor: it dies with the replica only if the replica ends
// gracefully (and its leader, by Pdeathsig, if it does not).
type localRun struct {
	stopCh chan struct{}
	once   sync.Once
	doneCh chan struct{}
	st     status
}

func startLocal(sp spec, out *os.File, log *slog.Logger) (*localRun, error) {
	c, err := startCommand(sp, out, log)
	if err != nil {
		return nil, err
	}
	r := &localRun{stopCh: make(chan struct{}), doneCh: make(chan struct{})}
	go func() {
		defer close(r.doneCh)
		r.st = c.wait(r.stopCh, nil)
	}()
	return r, nil
}

func (r *localRun) stop()                   { r.once.Do(func() { close(r.stopCh) }) }
func (r *localRun) done() <-chan struct{}   { return r.doneCh }
func (r *localRun) result() (status, error) { return r.st, nil }
