package cluster

import "syscall"

// What the benchmark (test/bench) needs beyond the fault suite: the process
// ids, to read a process's memory and CPU from /proc, and SIGHUP.

// Pid is the replica's process id, or 0 when it is not running.
func (r *Replica) Pid() int { return r.proc.pid() }

// Hangup sends SIGHUP: reload the config file.
func (r *Replica) Hangup() error { return r.proc.signal(syscall.SIGHUP) }

// Pid is the member's process id, or 0 when it is not running.
func (m *Member) Pid() int { return m.proc.pid() }

func (p *process) pid() int {
	if !p.running() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}
