package target

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The supervisor is a child subreaper: descendants of the command whose
// parent dies become its children rather than init's. A killed group's
// orphans are then reaped by us at once, so the group is gone, zombies
// included, when the supervisor is done; an init that reaps lazily (a
// container's PID 1 often does) would keep their pids, and the group id,
// in use for a while after the run ended.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapOrphans reaps adopted children as they die, until done closes. The
// leader is left alone: os/exec collects its status, and waitExit peeks at it
// first. Reaping as they come, not only at the end, keeps a long run whose
// command keeps orphaning children from filling the pid table.
func reapOrphans(leader int, done <-chan struct{}) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	for {
		select {
		case <-done:
			return
		case <-sig:
		}
		for _, pid := range zombieChildren() {
			if pid != leader {
				_, _ = unix.Wait4(pid, nil, unix.WNOHANG, nil)
			}
		}
	}
}

// reapAll reaps every child that has exited; called once the leader is
// reaped, when no status is anyone else's to collect.
func reapAll() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// zombieChildren lists this process's children that have exited.
func zombieChildren() []int {
	self := os.Getpid()
	return procs(func(state byte, ppid, _ int) bool { return ppid == self && state == 'Z' })
}
