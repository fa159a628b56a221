package target

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A process group is only a convention: a command that calls setsid (a
// daemon) leaves it, and group signals no longer reach it. A cgroup cannot
// be left without privileges, so where cgroup v2 is writable each exec run
// gets a cgroup of its own, its command is born in it (clone3 with
// CLONE_INTO_CGROUP, so not even an early fork escapes), and at the end of
// the run whatever is still in it is killed and the cgroup removed.

// procSelf is where this process's mountinfo and cgroup files are read;
// tests point it at files of their own to see a host without a usable
// cgroup v2.
var procSelf = "/proc/self"

// cgroupParent returns the cgroup v2 directory this process runs in, once it
// made sure a child cgroup can be created there. It fails on a cgroup v1
// host, in a container whose /sys/fs/cgroup is read-only, or where this
// process's cgroup lies outside what is mounted (another cgroup namespace).
func cgroupParent() (string, error) {
	mnt, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	rel, ok := strings.CutPrefix(own, root)
	if !ok {
		return "", fmt.Errorf("cgroup %s is outside the cgroup2 mount of %s at %s", own, root, mnt)
	}
	dir := filepath.Join(mnt, rel)
	probe := filepath.Join(dir, fmt.Sprintf("scheduler-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Errorf("cannot create a child cgroup: %w", err)
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.procs")); err != nil {
		return "", fmt.Errorf("child cgroup %s is not a cgroup: %w", probe, err)
	}
	return dir, nil
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted: at
// /sys/fs/cgroup on a pure v2 host, often /sys/fs/cgroup/unified on a
// hybrid one, so it is read from mountinfo rather than assumed.
func cgroup2Mount() (mountPoint, root string, err error) {
	b, err := os.ReadFile(filepath.Join(procSelf, "mountinfo"))
	if err != nil {
		return "", "", fmt.Errorf("read mountinfo: %w", err)
	}
	// "36 25 0:32 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw"
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		l, r := strings.Fields(left), strings.Fields(right)
		if !ok || len(l) < 5 || len(r) < 1 || r[0] != "cgroup2" {
			continue
		}
		return unescapeMount(l[4]), unescapeMount(l[3]), nil
	}
	return "", "", errors.New("no cgroup2 file system is mounted")
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// ownCgroup reads this process's cgroup v2 path (the "0::" line).
func ownCgroup() (string, error) {
	b, err := os.ReadFile(filepath.Join(procSelf, "cgroup"))
	if err != nil {
		return "", fmt.Errorf("read own cgroup: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2")
}

// runCgroup is the cgroup of one exec run.
type runCgroup struct {
	dir string
	fd  *os.File // the directory, for SysProcAttr.CgroupFD
}

func newRunCgroup(dir string) (*runCgroup, error) {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		// Left by a run whose supervisor was killed before it could clean
		// up, in a replica that had this pid: whatever is in it is a
		// leftover of that run.
		_ = endCgroup(dir)
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil {
		return nil, fmt.Errorf("create run cgroup: %w", err)
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open run cgroup: %w", err)
	}
	return &runCgroup{dir: dir, fd: fd}, nil
}

// cgroupFD is the descriptor to start the command in, -1 without a cgroup.
func (c *runCgroup) cgroupFD() int {
	if c == nil {
		return -1
	}
	return int(c.fd.Fd())
}

// end kills whatever is left in the run's cgroup and removes it.
func (c *runCgroup) end() error {
	if c == nil {
		return nil
	}
	c.fd.Close()
	return endCgroup(c.dir)
}

// endCgroup kills every process in cgroup dir, waits until none is left
// and removes it. A cgroup that no longer exists has nothing to end.
func endCgroup(dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	oneByOne := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		// cgroup.kill came with Linux 5.14; before it, members are killed
		// one by one, again on every look, since a member that forks
		// before its SIGKILL lands puts its child in the cgroup too.
		oneByOne = true
	case err != nil:
		return fmt.Errorf("kill run cgroup: %w", err)
	}
	live := func() bool {
		pids := cgroupProcs(dir)
		for _, pid := range pids {
			if oneByOne {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return len(pids) > 0
	}
	if !waitFor(live, killWait, nil) {
		return fmt.Errorf("run cgroup %s still populated %s after SIGKILL", dir, killWait)
	}
	// Dead members leave the cgroup as they exit, reaped or not; removal
	// can still race the kernel's bookkeeping, hence the retries.
	busy := func() bool {
		err = os.Remove(dir)
		return errors.Is(err, syscall.EBUSY)
	}
	waitFor(busy, killWait, nil)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove run cgroup: %w", err)
	}
	return nil
}

// cgroupProcs lists the pids in cgroup dir.
func cgroupProcs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sweepRunCgroups ends the run cgroups in parent left by replicas that are
// gone: one without a supervisor, or whose supervisor was killed with it,
// cannot end its own. A replica's pid is in the name, so the cgroups of
// live replicas sharing the parent are left alone. It returns how many it
// ended.
func sweepRunCgroups(parent string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(parent, "scheduler-run-*-*"))
	if err != nil {
		return 0, fmt.Errorf("list run cgroups: %w", err)
	}
	n := 0
	var errs []error
	for _, dir := range dirs {
		owner, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), "scheduler-run-"), "-")
		pid, err := strconv.Atoi(owner)
		if err != nil || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if err := endCgroup(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
