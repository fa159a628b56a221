package cluster

import "syscall"

// Children get their own process group (a ^C to the test does not reach
// them first) and die with the test process, so nothing outlives a crashed
// test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
