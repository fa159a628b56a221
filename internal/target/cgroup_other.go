//go:build !linux

package target

import "errors"

// Run cgroups are a Linux feature; elsewhere a daemon that leaves its run's
// process group with setsid survives the run.

func cgroupParent() (string, error) {
	return "", errors.New("cgroups exist only on Linux")
}

type runCgroup struct{}

func newRunCgroup(string) (*runCgroup, error) {
	return nil, errors.New("cgroups exist only on Linux")
}

func (c *runCgroup) cgroupFD() int { return -1 }
func (c *runCgroup) end() error    { return nil }
func endCgroup(string) error       { return nil }

func sweepRunCgroups(string) (int, error) { return 0, nil }
