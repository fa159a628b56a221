package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
)

// supervisedRun is the replica's side of an exec run started through a
// supervisor process (see Supervise).
type supervisedRun struct {
	proc   *exec.Cmd
	mu     sync.Mutex // guards ctl against a stop racing its close
	ctl    *os.File   // the supervisor's stdin: while it is open, we live
	doneCh chan struct{}
	// Set before doneCh closes.
	res ended
	err error
}

// startSupervised starts a supervisor from binary for sp, with out as its
// (and so the command's) stdout and stderr, and hands it the spec. Its log
// records go to log with ctx.
func startSupervised(ctx context.Context, binary string, sp spec, out *os.File, log *slog.Logger) (*supervisedRun, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervisor control pipe: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("supervisor report pipe: %w", err)
	}
	proc := exec.Command(binary, SupervisorArg)
	// Named as the replica is, not "/proc/self/exe", for whoever reads ps.
	proc.Args[0] = os.Args[0]
	// The supervisor needs nothing from the environment, and the
	// scheduler's holds secrets; the command's comes in the spec. GORACE
	// matters only to a race-enabled build (tests), whose runtime would
	// otherwise sleep a second at exit, with the run waiting on it.
	proc.Env = []string{"GORACE=atexit_sleep_ms=0"}
	proc.Stdin = ctlR
	proc.Stdout, proc.Stderr = out, out
	proc.ExtraFiles = []*os.File{repW} // fd 3
	err = proc.Start()
	// Only the supervisor holds these ends now, so our ctlW is the only
	// writer it can see and its repW the only writer we can see.
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	r := &supervisedRun{proc: proc, ctl: ctlW, doneCh: make(chan struct{})}
	// Written before the reader starts; a supervisor that died at once
	// makes this fail, and the reader then reports it.
	_ = json.NewEncoder(ctlW).Encode(sp)
	go r.read(ctx, repR, sp, log)
	return r, nil
}

// read relays the supervisor's log records until its final report, then
// waits for it to exit.
func (r *supervisedRun) read(ctx context.Context, rep *os.File, sp spec, log *slog.Logger) {
	defer close(r.doneCh)
	dec := json.NewDecoder(rep)
	for {
		var m report
		if err := dec.Decode(&m); err != nil {
			r.err = fmt.Errorf("supervisor ended without a report: %w", err)
			break
		}
		if l := m.Log; l != nil {
			args := make([]any, 0, len(l.Attrs))
			for _, a := range l.Attrs {
				args = append(args, a)
			}
			log.Log(ctx, l.Level, l.Msg, args...)
		}
		if m.Done != nil {
			r.res = *m.Done
			break
		}
	}
	rep.Close()
	if werr := r.proc.Wait(); r.err != nil && werr != nil {
		r.err = fmt.Errorf("%w (%v)", r.err, werr)
	}
	r.mu.Lock()
	r.ctl.Close()
	r.ctl = nil
	r.mu.Unlock()
	if r.err != nil && sp.Cgroup != "" {
		// The supervisor was killed; its Pdeathsig took the leader. What
		// the run's cgroup still holds is ours to end.
		if err := endCgroup(sp.Cgroup); err != nil {
			log.Warn("end run cgroup after its supervisor died", "err", err)
		}
	}
}

func (r *supervisedRun) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctl != nil {
		// A failed write means the supervisor is gone; read reports that.
		_ = json.NewEncoder(r.ctl).Encode(control{Stop: true})
	}
}

func (r *supervisedRun) done() <-chan struct{} { return r.doneCh }

func (r *supervisedRun) result() (status, error) {
	switch {
	case r.err != nil:
		return status{}, r.err
	case r.res.Error != "":
		return status{}, errors.New(r.res.Error)
	}
	return r.res.Status, nil
}
