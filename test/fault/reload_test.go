package fault

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// reloadKillLeader: a reload that changes two lean jobs' specs (their
// targets' URLs), then, 0-250 ms after every replica was told, SIGKILL of
// the leader, restarted. The leader withdraws a changed job's ticks
// assigned ahead and plans them again with the new spec; a leader that
// dies on the way must leave every tick run or recorded (G2), none run
// twice (G1), whatever point of the withdrawal it died at
// (docs/design-leader.md, "A changed job").
const reloadKillLeader faultKind = "reload-kill-leader"

// reloadToggles are the workload's strings a reload swaps, each for the
// other: fast's and wide's target URLs (both lean jobs, docs/protocol.md).
var reloadToggles = [][2]string{
	{"sleep=50ms&fail=5", "sleep=60ms&fail=5"},
	{"sleep=2500ms&fail=6", "sleep=2400ms&fail=6"},
}

// injectReload runs the faults of this file; it reports whether kind was
// one.
func (r *runner) injectReload(f *injected, must func(error)) bool {
	if f.kind != reloadKillLeader {
		return false
	}
	l := r.leader()
	must(r.toggleConfig())
	for _, rep := range r.c.Replicas {
		if rep.Running() { // one that failed to start reads the file when it does
			must(rep.Hangup())
		}
	}
	r.hold(time.Duration(r.rng.IntN(250)) * time.Millisecond)
	r.killAndRestart(f, l, must)
	return true
}

// toggleConfig rewrites the replicas' config file with each of
// reloadToggles swapped.
func (r *runner) toggleConfig() error {
	path := cluster.ConfigPath(r.c.Dir)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := string(b)
	for _, t := range reloadToggles {
		switch {
		case strings.Contains(cfg, t[0]):
			cfg = strings.ReplaceAll(cfg, t[0], t[1])
		case strings.Contains(cfg, t[1]):
			cfg = strings.ReplaceAll(cfg, t[1], t[0])
		default:
			return fmt.Errorf("reload: the config has neither %q nor %q", t[0], t[1])
		}
	}
	return os.WriteFile(path, []byte(cfg), 0o644)
}
