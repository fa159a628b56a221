// Package cluster runs a scheduler cluster as real processes on loopback: a
// multi-member etcd (test/etcdnode), scheduler replicas (cmd/scheduler), each
// reaching etcd only through its own pausable TCP proxies, and a witness
// target that records what the replicas did. It is the ground the
// fault-injection suite (test/fault) and the benchmark stand on; every
// process can be killed, frozen, partitioned and restarted.
//
// Nothing here mocks anything: faults are signals to processes and silence
// on sockets.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the programs a cluster runs.
type Binaries struct {
	Scheduler string // cmd/scheduler
	EtcdNode  string // test/etcdnode
}

// Build compiles cmd/scheduler (with the given build tags) and
// test/etcdnode into dir. Binaries are built without -race whatever the
// test process uses: they are the system under test, not the test.
func Build(ctx context.Context, dir string, schedulerTags ...string) (Binaries, error) {
	root, err := ModuleRoot()
	if err != nil {
		return Binaries{}, err
	}
	suffix := ""
	if len(schedulerTags) > 0 {
		suffix = "-" + strings.Join(schedulerTags, "-")
	}
	b := Binaries{
		Scheduler: filepath.Join(dir, "scheduler"+suffix),
		EtcdNode:  filepath.Join(dir, "etcdnode"),
	}
	builds := [][]string{{"build", "-o", b.Scheduler}, {"build", "-o", b.EtcdNode, "./test/etcdnode"}}
	if len(schedulerTags) > 0 {
		builds[0] = append(builds[0], "-tags", strings.Join(schedulerTags, ","))
	}
	builds[0] = append(builds[0], "./cmd/scheduler")
	for _, args := range builds {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = root
		// The binaries never inherit the race detector or coverage of
		// the test binary that builds them.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("cluster: go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return b, nil
}

// ModuleRoot is the directory of the go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cluster: no go.mod above the working directory")
		}
		dir = parent
	}
}

// BuildAt compiles cmd/scheduler as it was at a git commit (any ref the
// repository knows: a hash, a tag, a branch) into dir, for a cluster that
// mixes versions (a rolling upgrade). The source is exported with `git
// archive` into dir/src-<hash>, and the binary, dir/scheduler-<hash>, is
// reused when it exists: one build per commit per dir.
func BuildAt(ctx context.Context, dir, ref string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", ref+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("cluster: %q is not a commit of %s: %w", ref, root, err)
	}
	hash := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "scheduler-"+hash[:12])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src := filepath.Join(dir, "src-"+hash[:12])
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, hash, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: export %s: %w\n%s", hash[:12], err, out)
	}
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=false", "-ldflags", "-X main.version="+hash[:12],
		"-o", bin, "./cmd/scheduler")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cluster: build scheduler at %s: %w\n%s", hash[:12], err, out)
	}
	return bin, nil
}
