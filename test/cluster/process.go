package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// process is one child program, restartable, with its output appended to
// a log file across restarts.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current run ended
	frozen bool          // SIGSTOPped
}

// errNotRunning: a signal for a process that is not running.
var errNotRunning = errors.New("cluster: process not running")

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("cluster: %s already running", p.name)
		}
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== %s start %s (%s)\n", time.Now().Format(time.RFC3339Nano), p.name, filepath.Base(p.bin))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("cluster: start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== %s exit %s: %v\n", time.Now().Format(time.RFC3339Nano), p.name, err)
		_ = logf.Close()
		close(exited)
	}()
	p.cmd, p.exited, p.frozen = cmd, exited, false
	return nil
}

// running reports whether the process is alive (frozen counts as alive).
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.aliveLocked()
}

// aliveLocked is running with p.mu held.
func (p *process) aliveLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.aliveLocked() {
		return errNotRunning
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("cluster: %s %s: %w", sig, p.name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.frozen = true
	case syscall.SIGCONT:
		p.frozen = false
	}
	return nil
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill() error {
	err := p.signal(syscall.SIGKILL)
	if errors.Is(err, errNotRunning) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.wait(30 * time.Second)
}

// term sends SIGTERM (and SIGCONT, should the process be frozen) and waits
// up to timeout for the exit, then kills it.
func (p *process) term(timeout time.Duration) error {
	err := p.signal(syscall.SIGTERM)
	if errors.Is(err, errNotRunning) {
		return nil
	}
	if err != nil {
		return err
	}
	_ = p.signal(syscall.SIGCONT)
	if err := p.wait(timeout); err != nil {
		_ = p.kill()
		return fmt.Errorf("cluster: %s ignored SIGTERM for %s; killed", p.name, timeout)
	}
	return nil
}

func (p *process) wait(timeout time.Duration) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("cluster: %s still running after %s", p.name, timeout)
	}
}

func (p *process) isFrozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before it is used; on loopback in a test run that is rare, and a
// start then fails loudly.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
