package target

import (
	"log/slog"
	"syscall"
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// killWait bounds how long we wait for a group to vanish after SIGKILL.
// SIGKILL cannot be caught, so only a process stuck in the kernel (D state)
// outlives it; we log that rather than hold the run open forever.
const killWait = 5 * time.Second

// group is the process group of one exec run. The leader was started with
// Setpgid, so the group id is its pid; every descendant stays in it unless
// it deliberately calls setsid or setpgid.
//
// Signals go to the group only while the leader is unreaped (see waitExit):
// a zombie leader keeps its pid, hence the group id, from being reused, so a
// signal can never reach an unrelated process that happens to get the number.
type group struct {
	pgid int
	log  *slog.Logger
}

// stop ends every process of the group: SIGTERM, up to grace for them to
// exit, then SIGKILL. It returns once none is alive (or killWait passed).
// Used both on cancellation and after a leader exits by itself, because a
// process it left behind would go on running outside the run's slot.
//
// Once hurry is closed (the replica that owns the run is gone) the grace is
// over: nobody will record how the run ended, and every moment the group
// lives it may overlap the retry on another replica.
func (g group) stop(grace time.Duration, hurry <-chan struct{}) {
	select {
	case <-hurry:
		// Straight to SIGKILL: alive reads all of /proc, which is time
		// the group would go on running.
	default:
		if !g.alive() {
			return
		}
		g.signal(syscall.SIGTERM)
		if g.waitGone(grace, hurry) {
			return
		}
		select {
		case <-hurry:
		default:
			g.log.Info("process group ignored SIGTERM, killing", "pgid", g.pgid, "grace", grace)
		}
	}
	g.signal(syscall.SIGKILL)
	if !g.waitGone(killWait, nil) {
		g.log.Warn("process group still alive after SIGKILL", "pgid", g.pgid)
	}
}

func (g group) signal(sig syscall.Signal) {
	// ESRCH only means the group just emptied; nothing else is actionable.
	if err := syscall.Kill(-g.pgid, sig); err != nil && err != syscall.ESRCH {
		g.log.Warn("signal process group", "pgid", g.pgid, "signal", sig.String(), "err", err)
	}
}

// waitGone polls until the group is empty, d passes or hurry is closed.
// Members are not our children (grandchildren are reparented), so there is
// nothing to wait on but their absence; the poll starts fast and backs off
// to stay cheap.
func (g group) waitGone(d time.Duration, hurry <-chan struct{}) bool {
	return waitFor(g.alive, d, hurry)
}

// goneCheck spaces the looks at a process group on its way out: 2ms
// catches the common quick exit, 50ms bounds how late a slow one is seen;
// no jitter, as the looks cost no one but this replica.
var goneCheck = backoff.Policy{Min: 2 * time.Millisecond, Max: 50 * time.Millisecond}

// waitFor polls until busy reports false, d passes or hurry is closed, and
// reports whether busy ended.
func waitFor(busy func() bool, d time.Duration, hurry <-chan struct{}) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	step := goneCheck.Start()
	for {
		if !busy() {
			return true
		}
		t := time.NewTimer(step.Next())
		select {
		case <-deadline.C:
			t.Stop()
			return !busy()
		case <-hurry:
			t.Stop()
			return !busy()
		case <-t.C:
		}
	}
}
