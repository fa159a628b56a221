package target

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// Discover fills in the settings this binary and host allow, and logs as a
// warning each it cannot have, with why: Supervisor is this very binary
// when supervised says its main calls Supervise first; CgroupParent is
// this process's own cgroup v2 once a child cgroup could be made there.
func (o Options) Discover(supervised bool) Options {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "target")
	switch self, err := selfExe(); {
	case !supervised:
		log.Warn("exec runs are not supervised: a command outlives a replica killed with SIGKILL",
			"reason", "this binary's main does not call target.Supervise")
	case err != nil:
		log.Warn("exec runs are not supervised: a command outlives a replica killed with SIGKILL", "err", err)
	default:
		o.Supervisor = self
	}
	if dir, err := cgroupParent(); err != nil {
		log.Warn("exec runs get no cgroup of their own: a daemon that escapes its run's process group with setsid survives the run",
			"reason", err)
	} else {
		o.CgroupParent = dir
	}
	return o
}

// check says which setting cannot be used, quoting it.
func (o Options) check() error {
	if o.Supervisor != "" {
		fi, err := os.Stat(o.Supervisor)
		switch {
		case err != nil:
			return fmt.Errorf("target: supervisor %q: %w; name this binary (its main calls target.Supervise), or leave it empty", o.Supervisor, err)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return fmt.Errorf("target: supervisor %q is not an executable file; name this binary (its main calls target.Supervise), or leave it empty", o.Supervisor)
		}
	}
	if o.CgroupParent != "" {
		if _, err := os.Stat(filepath.Join(o.CgroupParent, "cgroup.procs")); err != nil {
			return fmt.Errorf("target: cgroup parent %q is not a cgroup v2 directory (%w); leave it empty for runs without a cgroup of their own",
				o.CgroupParent, errors.Unwrap(err))
		}
	}
	return nil
}

// SweepCgroups ends the run cgroups left in the cgroup parent by replicas
// that are gone, and returns how many it ended. A replica runs it once at
// start, after making its Executor; without a cgroup parent it does
// nothing.
func (e *Executor) SweepCgroups() (int, error) {
	if e.cgroupDir == "" {
		return 0, nil
	}
	return sweepRunCgroups(e.cgroupDir)
}
