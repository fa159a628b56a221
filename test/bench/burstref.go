package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// refPrefix holds the reference's job keys, beside the scheduler's.
const refPrefix = "/bench/burstref/"

// refProcs is the burst scenario's reference: bare processes that share
// the jobs of a step (refWorker), on the step's etcd.
type refProcs struct {
	cmds []*exec.Cmd
}

// startReference re-executes this binary as procs reference workers, the n
// jobs (named name + index) split among them, and waits until each has
// written its jobs' keys.
func startReference(ctx context.Context, e *env, n, procs int, name string) (*refProcs, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: reference: %w", err)
	}
	r := &refProcs{}
	for i := range procs {
		from, to := i*n/procs, (i+1)*n/procs
		if from == to {
			continue
		}
		args := []string{refWorkerCommand,
			"-endpoints", strings.Join(e.c.Endpoints(), ","), "-prefix", refPrefix, "-witness", e.w.URL(""),
			"-name", name, "-from", strconv.Itoa(from), "-to", strconv.Itoa(to)}
		if e.profileDir != "" {
			dir := filepath.Join(e.profileDir, "profiles")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				r.stop()
				return nil, err
			}
			args = append(args, "-cpuprofile", filepath.Join(dir, fmt.Sprintf("burst-%d-reference%d-cpu.pprof", n, i+1)))
		}
		cmd, err := r.start(ctx, self, e, i, args)
		if err != nil {
			r.stop()
			return nil, err
		}
		r.cmds = append(r.cmds, cmd)
	}
	return r, nil
}

// start runs one worker with its stderr in the logs and waits for its
// "ready" line.
func (r *refProcs) start(ctx context.Context, self string, e *env, i int, args []string) (*exec.Cmd, error) {
	logf, err := os.OpenFile(filepath.Join(e.dir, "logs", fmt.Sprintf("reference%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(self, args...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: reference worker %d: %w", i+1, err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(time.Minute):
		err = errors.New("not ready within a minute")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // closes the pipe, which ends the reader
		return nil, fmt.Errorf("bench: reference worker %d (log in %s): %w", i+1, logf.Name(), err)
	}
	return cmd, nil
}

func (r *refProcs) pids() []int {
	var out []int
	for _, c := range r.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}

// stop sends SIGTERM to every worker and waits for them, killing any that
// has not exited within 10 s.
func (r *refProcs) stop() {
	for _, c := range r.cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range r.cmds {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	r.cmds = nil
}

// forgetReference deletes the reference's keys after its step.
func (e *env) forgetReference(ctx context.Context) {
	if _, err := e.cli.Delete(ctx, refPrefix, clientv3.WithPrefix()); err != nil {
		logf("forgetting %s: %v", refPrefix, err)
	}
}
