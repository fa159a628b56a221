//go:build unix && !linux

package target

import (
	"os"
	"os/exec"
	"syscall"
)

// waitExit reaps the leader at once: without waitid(WNOWAIT) there is no
// portable way to keep it as a zombie, so the group id is less guarded here
// than on Linux, where the scheduler is meant to run.
func waitExit(cmd *exec.Cmd) (reap func() error) {
	err := cmd.Wait()
	return func() error { return err }
}

// alive counts zombies too; without /proc there is no cheap way not to.
func (g group) alive() bool {
	return syscall.Kill(-g.pgid, 0) != syscall.ESRCH
}

// procAttr starts the command as the leader of a new process group; the
// other safeguards of Linux (Pdeathsig, cgroups) have no equivalent here.
func procAttr(int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func selfExe() (string, error) { return os.Executable() }
