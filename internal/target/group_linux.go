package target

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until the leader has exited but leaves it unreaped
// (WNOWAIT), so its pid and group id stay reserved while we clean up the
// group; the returned reap collects it through os/exec.
func waitExit(cmd *exec.Cmd) (reap func() error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Cannot peek; reaping now is still correct, only less guarded.
			werr := cmd.Wait()
			return func() error { return werr }
		}
		return cmd.Wait
	}
}

// alive reports whether any process of the group still runs. kill(-pgid, 0)
// answers quickly when the group is empty, but it also counts zombies: our
// unreaped leader, and orphans whose new parent (a container's PID 1, often)
// never reaps them. A zombie runs nothing, so /proc decides.
func (g group) alive() bool {
	if err := syscall.Kill(-g.pgid, 0); err == syscall.ESRCH {
		return false
	}
	return len(groupMembers(g.pgid)) > 0
}

// groupMembers lists the pids in process group pgid that are not zombies.
func groupMembers(pgid int) []int {
	return procs(func(state byte, _, pgrp int) bool {
		return pgrp == pgid && state != 'Z' && state != 'X'
	})
}

// procs lists the pids of /proc whose stat keep accepts; a process that
// exits while it looks is left out.
func procs(keep func(state byte, ppid, pgrp int) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited while we looked
		}
		if state, ppid, pgrp, ok := parseStat(stat); ok && keep(state, ppid, pgrp) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parseStat reads the state, parent and process group from
// /proc/<pid>/stat: "pid (comm) state ppid pgrp ...". comm may hold spaces
// and parentheses, so fields are counted from the last ')'.
func parseStat(stat []byte) (state byte, ppid, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, 0, false
	}
	return f[0][0], ppid, pgrp, true
}

// procAttr starts the command as the leader of a new process group, in the
// run's cgroup when there is one (cgroupFD >= 0). Pdeathsig is the second
// line of defence: should whoever started the command (the supervisor, or
// the replica itself without one) die without killing the group, the
// leader at least gets SIGKILL. It is tied to the thread that forks, which
// is why startCommand locks that thread around the start.
func procAttr(cgroupFD int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:     true,
		Pdeathsig:   syscall.SIGKILL,
		UseCgroupFD: cgroupFD >= 0,
		CgroupFD:    max(cgroupFD, 0),
	}
}

// selfExe names this very binary for a supervisor. /proc/self/exe rather
// than its target: after an upgrade in place the path holds the new
// binary, whose supervisor might not speak this replica's protocol, while
// /proc/self/exe still opens the file this process runs from.
func selfExe() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}
