package fault

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/test/cluster"
)

// Faults an operator meets outside the safety model (docs/design-edges.md#operating-at-the-edges).
const (
	// etcdDownTerm: every member killed, then SIGTERM to every replica;
	// each must exit within shutdown_grace + 10s, and after etcd and the
	// replicas return every run is accounted for (rule 7).
	etcdDownTerm faultKind = "etcd-down-term"
	// killExecHolder: SIGKILL a replica during an exec run whose command
	// writes a heartbeat every 100ms; no heartbeat may come later than 1s
	// after the kill (the run's process group dies with the replica).
	killExecHolder faultKind = "kill-exec-holder"
)

// shutdownGrace is worker.shutdown_grace in the workload.
const shutdownGrace = 2 * time.Second

// beatJob is the workload's exec job: each run appends a timestamp (Unix
// nanoseconds) every 100ms to a file of its own in the heartbeat folder,
// for 3s.
const beatJob = "beat"

func beatYAML(dir string) string {
	script := `for i in $(seq 30); do date +%s%N >> "$BEATS/$SCHEDULER_RUN_ID-$SCHEDULER_FENCING_TOKEN"; sleep 0.1; done`
	return fmt.Sprintf(`  - name: %s
    schedule: "@every 4s"
    max_concurrency: 1
    catch_up: none
    starting_deadline: 30s
    history_limit: 100000
    overlap: skip
    timeout: 10s
    exec:
      command: ["sh", "-c", %q]
      env: {BEATS: %q}
      kill_grace: 200ms
`, beatJob, script, dir)
}

// injectEdge runs the faults of this file; it reports whether kind was one.
func (r *runner) injectEdge(f *injected, must func(error)) bool {
	switch f.kind {
	case etcdDownTerm:
		f.target, f.leader, f.start = "all members and replicas", true, time.Now()
		must(r.c.KillEtcd())
		r.checkNotReady(f.start)
		r.termAll()
		restarting := time.Now()
		ctx, cancel := r.ctx(90 * time.Second)
		must(r.c.StartEtcd(ctx))
		cancel()
		r.etcdDown = append(r.etcdDown, Window{f.start, restarting})
		for _, rep := range r.c.Replicas {
			must(rep.Start())
		}
	case killExecHolder:
		h, run, token := r.execHolder()
		f.target, f.start = h.ID, time.Now()
		f.leader = r.leader() == h
		must(h.Kill())
		killed := time.Now()
		r.hold(time.Second + 500*time.Millisecond)
		r.checkBeats(run, token, killed)
		must(h.Start())
	default:
		return false
	}
	return true
}

// termAll sends SIGTERM to every replica at once and records, as a
// problem, any that took longer than shutdown_grace + 10s to exit.
func (r *runner) termAll() {
	limit := shutdownGrace + 10*time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, rep := range r.c.Replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := rep.Term(limit + 20*time.Second)
			took := time.Since(start)
			if err != nil || took > limit {
				mu.Lock()
				r.problems = append(r.problems, fmt.Sprintf("etcd down: %s exited %s after SIGTERM (err %v); want within shutdown_grace + 10s = %s",
					rep.ID, took.Round(time.Millisecond), err, limit))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// execHolder waits for a replica to hold a slot of the exec job with a run
// that has been writing heartbeats for a while.
func (r *runner) execHolder() (*cluster.Replica, string, int64) {
	var h *cluster.Replica
	var run string
	var token int64
	r.waitFor(30*time.Second, "a replica running "+beatJob, func() bool {
		held, ok := r.heldSlots()
		if !ok {
			return false
		}
		for _, s := range held {
			// The command is writing (it has started: the supervisor and
			// the shell take a moment on a loaded machine) and has 2s of
			// its 30 beats to go, so a survivor would write past the 1s.
			if s.Job != beatJob {
				continue
			}
			beats := r.readBeats(s.RunID, s.FencingToken)
			if len(beats) > 0 && len(beats) < 10 && time.Since(beats[len(beats)-1]) < 300*time.Millisecond {
				h, run, token = r.c.Replica(s.Holder), s.RunID, s.FencingToken
				return h != nil
			}
		}
		return false
	})
	return h, run, token
}

// readBeats returns the heartbeats one run has written so far.
func (r *runner) readBeats(runID string, token int64) []time.Time {
	data, err := os.ReadFile(filepath.Join(r.beats, runID+"-"+strconv.FormatInt(token, 10)))
	if err != nil {
		return nil
	}
	var out []time.Time
	for _, line := range bytes.Fields(data) {
		if ns, err := strconv.ParseInt(string(line), 10, 64); err == nil {
			out = append(out, time.Unix(0, ns))
		}
	}
	return out
}

// checkBeats records, as a problem, a heartbeat of the run later than 1s
// after the kill.
func (r *runner) checkBeats(runID string, token int64, killed time.Time) {
	beats := r.readBeats(runID, token)
	if len(beats) == 0 {
		r.problems = append(r.problems, fmt.Sprintf("exec kill: no heartbeats of %s", runID))
		return
	}
	if last := beats[len(beats)-1]; last.Sub(killed) > time.Second {
		r.problems = append(r.problems, fmt.Sprintf("exec kill: %s wrote a heartbeat %s after its replica was killed; want none after 1s",
			runID, last.Sub(killed).Round(time.Millisecond)))
	}
	r.beatChecks++
}
