package target

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// TestExecSetsidDaemonDiesWithRun: a command starts a daemon that leaves
// its process group with setsid, waits until it beats, and exits 0. The run
// succeeds, and within 1s of its end the daemon is dead and the run's
// cgroup removed. Without a run cgroup nothing would kill the daemon.
func TestExecSetsidDaemonDiesWithRun(t *testing.T) {
	parent, err := cgroupParent()
	if err != nil {
		t.Skipf("no writable cgroup v2 here, so a daemon escaping with setsid survives its run: %v", err)
	}
	t.Logf("run cgroups are made in %s", parent)
	dir := t.TempDir()
	// $0 is the directory. The daemon is a session leader, so its pid is
	// also its group id: nothing sent to the run's group reaches it.
	script := `setsid sh -c 'echo $$ > "$0/daemon"; while :; do date +%s%N > "$0/beat"; sleep 0.1; done' "$0" &
while [ ! -s "$0/daemon" ] || [ ! -e "$0/beat" ]; do sleep 0.01; done`
	e := testExecutor(t)
	if e.cgroupDir == "" {
		t.Fatal("the Executor found no cgroup parent where the test did")
	}
	res := e.Execute(t.Context(), execJob(time.Minute, time.Second, "sh", "-c", script, dir), testRun())
	ended := time.Now()
	if res.Outcome != runs.Succeeded {
		t.Fatalf("result = %+v, want succeeded", res)
	}
	b, err := os.ReadFile(filepath.Join(dir, "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("daemon pid %q: %v", b, err)
	}

	deadline := ended.Add(time.Second)
	poll.Until(t, time.Until(deadline), "the daemon to be dead", func() (bool, string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", daemon))
		if err != nil {
			return true, ""
		}
		state, _, _, _ := parseStat(stat)
		return state == 'Z', fmt.Sprintf("daemon %d is in state %c", daemon, state)
	})
	fi, err := os.Stat(filepath.Join(dir, "beat"))
	if err != nil {
		t.Fatal(err)
	}
	if last := fi.ModTime(); last.After(deadline) {
		t.Errorf("daemon last beat %v after the run ended, want within 1s", last.Sub(ended))
	}
	left, _ := filepath.Glob(filepath.Join(parent, fmt.Sprintf("scheduler-run-%d-*", os.Getpid())))
	if len(left) > 0 {
		t.Errorf("run cgroups left after the run: %q", left)
	}
}

// TestSweepEndsRunCgroupsOfGoneReplicas: a run cgroup named after a replica
// that no longer exists is emptied and removed by SweepCgroups; one
// named after a live replica (this process) is left alone.
func TestSweepEndsRunCgroupsOfGoneReplicas(t *testing.T) {
	parent, err := cgroupParent()
	if err != nil {
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale, err := newRunCgroup(filepath.Join(parent, fmt.Sprintf("scheduler-run-%d-1", gone.Process.Pid)))
	if err != nil {
		t.Fatal(err)
	}
	leftover := exec.Command("sleep", "1000")
	leftover.SysProcAttr = procAttr(stale.cgroupFD())
	if err := leftover.Start(); err != nil {
		stale.end()
		t.Fatal(err)
	}
	stale.fd.Close()
	live, err := newRunCgroup(filepath.Join(parent, fmt.Sprintf("scheduler-run-%d-999999", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	defer live.end()

	e, err := NewExecutor(Options{CgroupParent: parent})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n, err := e.SweepCgroups()
	if err != nil || n < 1 {
		t.Errorf("sweep ended %d cgroups, err %v; want at least the stale one", n, err)
	}
	if err := leftover.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the stale run's process ended with %v, want killed", err)
	}
	if _, err := os.Stat(stale.dir); !os.IsNotExist(err) {
		t.Errorf("stale run cgroup still there: %v", err)
	}
	if _, err := os.Stat(live.dir); err != nil {
		t.Errorf("a live replica's run cgroup was swept: %v", err)
	}
}

func TestCgroup2MountPathsUnescaped(t *testing.T) {
	if got := unescapeMount(`/mnt/with\040space\134x`); got != `/mnt/with space\x` {
		t.Errorf("unescapeMount = %q", got)
	}
}

// TestNoCgroupIsLogged: where no child cgroup can be made, an Executor says
// so in the log at start, with the reason, and exec runs still run, only
// without a cgroup. The host is faked by pointing procSelf at a mountinfo
// and a cgroup file of the test's own; no privileges are needed.
func TestNoCgroupIsLogged(t *testing.T) {
	saved := procSelf
	t.Cleanup(func() { procSelf = saved })
	mnt := t.TempDir()
	// A plain directory where the cgroup should be: a child can be made in
	// it, but the kernel gives the child no cgroup.procs.
	if err := os.Mkdir(filepath.Join(mnt, "replica"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, mountinfo, cgroup, reason string
	}{
		{"cgroup v1 only", "25 1 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "1:cpu:/replica\n",
			"no cgroup2 file system is mounted"},
		{"outside the mount", "36 25 0:32 /other " + mnt + " rw - cgroup2 cgroup2 rw\n", "0::/replica\n",
			"cgroup /replica is outside the cgroup2 mount"},
		{"not a cgroup", "36 25 0:32 / " + mnt + " rw - cgroup2 cgroup2 rw\n", "0::/replica\n",
			"is not a cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procSelf = t.TempDir()
			for name, content := range map[string]string{"mountinfo": tc.mountinfo, "cgroup": tc.cgroup} {
				if err := os.WriteFile(filepath.Join(procSelf, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rec := newRecorder()
			e, err := NewExecutor(Options{Logger: slog.New(rec)}.Discover(true))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			warned := false
			for _, l := range rec.lines() {
				if strings.HasPrefix(l, "WARN exec runs get no cgroup of their own") && strings.Contains(l, tc.reason) {
					warned = true
				}
			}
			if !warned {
				t.Errorf("no warning with reason %q among %q", tc.reason, rec.lines())
			}
			if e.cgroupDir != "" {
				t.Errorf("run cgroups would be made in %s", e.cgroupDir)
			}
			if res := e.Execute(t.Context(), execJob(time.Minute, time.Second, "true"), testRun()); res.Outcome != runs.Succeeded {
				t.Errorf("an exec run without a cgroup: %+v, want succeeded", res)
			}
		})
	}
}
