// Package target executes one run of a job against its target, an HTTP
// request or a local command (docs/configuration.md#what-a-target-is-told), and reports how it ended
// (docs/api.md). It knows nothing of etcd: the caller holds the slot and
// hands in a context that is cancelled when the run must stop (timeout is
// applied here; cancel requests and the lease guard come from the caller).
package target

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/etcdsched/scheduler/config"
)

const (
	// defaultTimeout is docs/configuration.md's default. Config applies it too; this
	// guards a Job built in code so a run can never be unbounded.
	defaultTimeout = time.Hour
	// defaultKillGrace is how long a process group gets between SIGTERM and
	// SIGKILL when the job does not say (kill_grace).
	defaultKillGrace = 10 * time.Second
)

// Options configure an Executor. The zero value is usable: exec runs start
// unsupervised and without a cgroup of their own. Discover fills in what
// this binary and host allow.
type Options struct {
	Logger *slog.Logger
	// Supervisor is the binary each exec run is started under as its
	// supervisor: one whose main calls Supervise first, as the
	// scheduler's does. Empty: exec runs are started unsupervised, and a
	// command outlives a replica killed with SIGKILL.
	Supervisor string
	// CgroupParent is the cgroup v2 directory in which each exec run gets
	// a cgroup of its own. Empty: none, and a daemon that escapes its
	// run's process group with setsid survives the run.
	CgroupParent string
}

// Executor runs targets. It is safe for concurrent use; HTTP runs share one
// transport so keep-alive connections are reused from run to run.
type Executor struct {
	log       *slog.Logger
	transport http.RoundTripper
	// Two clients over one transport: redirects are a per-job choice, and
	// http.Client takes it as a client setting, not a request setting.
	follow, noFollow *http.Client
	supervisor       string // Options.Supervisor
	cgroupDir        string // Options.CgroupParent
}

// NewExecutor checks opts and returns an Executor; the error says which
// setting is wrong and why.
func NewExecutor(opts Options) (*Executor, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	e := &Executor{
		log:        opts.Logger,
		transport:  newTransport(),
		supervisor: opts.Supervisor,
		cgroupDir:  opts.CgroupParent,
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.log = e.log.With("component", "target")
	e.follow = &http.Client{Transport: e.transport, CheckRedirect: checkRedirect}
	e.noFollow = &http.Client{
		Transport: e.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return e, nil
}

// Execute runs job's target once and returns how it ended. It applies
// job.Timeout itself (timed_out); if ctx ends first the run is cancelled and
// the Error carries context.Cause(ctx). It returns only once the target is
// over: the HTTP exchange aborted or done, every process of an exec job's
// group gone.
func (e *Executor) Execute(ctx context.Context, job *config.Job, run Run) Result {
	if run.Job == "" {
		run.Job = job.Name
	}
	timeout := job.Timeout.D()
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("%w after %s", errTimeout, timeout))
	defer cancel()

	switch {
	case job.HTTP != nil && job.Exec != nil:
		return failed("target: job %q has both http and exec", job.Name)
	case job.HTTP != nil:
		return e.doHTTP(ctx, job.HTTP, run)
	case job.Exec != nil:
		return e.doExec(ctx, job.Exec, run)
	default:
		return failed("target: job %q has neither http nor exec", job.Name)
	}
}

// Close drops idle keep-alive connections; in-flight runs are not affected.
func (e *Executor) Close() {
	e.noFollow.CloseIdleConnections()
}
