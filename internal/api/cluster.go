package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/config"

	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/backfill"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Cluster is what the API asks of the scheduler; the replica provides it.
type Cluster interface {
	// Confirm fails, wrapping ErrUnconfirmed, while the replica cannot
	// confirm its view with etcd: the reads below then answer 503 rather
	// than a stale view (docs/design-edges.md#operating-at-the-edges).
	Confirm(ctx context.Context) error
	Leader(ctx context.Context) (election.Leader, error)
	Members(ctx context.Context) ([]election.Member, error)
	Slots(ctx context.Context) ([]slots.Info, error)
	Jobs(ctx context.Context, page jobs.Page) (list []jobs.JobStatus, next string, err error)
	Job(ctx context.Context, name string) (jobs.JobStatus, error)
	// RemovedJobs are the jobs gone from the config whose history is kept.
	RemovedJobs(ctx context.Context) ([]jobs.RemovedJob, error)
	Runs(ctx context.Context, job string, page jobs.Page) (list []runs.Record, next string, err error)
	FindRun(ctx context.Context, runID string) (jobs.RunStatus, error)
	Trigger(ctx context.Context, job string, req jobs.TriggerRequest) (runID string, duplicate bool, err error)
	Pause(ctx context.Context, job string, req jobs.PauseRequest) (jobs.JobStatus, error)
	Resume(ctx context.Context, job string) (jobs.JobStatus, error)
	Cancel(ctx context.Context, runID, reason string) error
	// Backfill queues the job's past ticks in [from, to) that never ran
	// nor were queued (docs/operations.md#backfilling).
	Backfill(ctx context.Context, job string, from, to time.Time) (backfill.Result, error)
}

const (
	defaultRunsLimit = 20
	maxRunsLimit     = 1000
)

func (s *Server) clusterRoutes(read, write func(http.HandlerFunc) http.HandlerFunc) {
	c := s.cluster
	s.mux.HandleFunc("GET /api/v1/leader", read(c(confirmed(s.leader))))
	s.mux.HandleFunc("GET /api/v1/members", read(c(confirmed(s.members))))
	s.mux.HandleFunc("GET /api/v1/slots", read(c(confirmed(s.slots))))
	s.mux.HandleFunc("GET /api/v1/jobs", read(c(confirmed(s.jobs))))
	s.mux.HandleFunc("GET /api/v1/jobs/{name}", read(named(c(confirmed(s.job)))))
	s.mux.HandleFunc("GET /api/v1/jobs/{name}/runs", read(named(c(s.runs))))
	s.mux.HandleFunc("GET /api/v1/runs/{id}", read(c(s.run)))
	// Bodies are checked before the cluster is asked anything, so a bad
	// request gets its 4xx even while the replica starts.
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/trigger", write(withBody(MaxTriggerBody, named(s.trigger))))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/pause", write(withBody(MaxPauseBody, named(s.pause))))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/resume", write(withBody(MaxEmptyBody, named(c(s.resume)))))
	s.mux.HandleFunc("POST /api/v1/runs/{id}/cancel", write(withBody(MaxCancelBody, s.cancel)))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/backfill", write(withBody(MaxBackfillBody, named(s.backfill))))
}

// named answers 404 unknown_job for a name that no job can have, before
// the engine is asked: such a name would only become an etcd key lookup.
func named(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if name := r.PathValue("name"); !reJobName.MatchString(name) {
			writeError(w, http.StatusNotFound, "unknown_job", "no job "+quoteClip(name)+": job names match "+config.NamePattern)
			return
		}
		h(w, r)
	}
}

var reJobName = regexp.MustCompile(`^` + config.NamePattern + `$`)

// cluster adapts a handler that needs the cluster; 503 until it is wired.
func (s *Server) cluster(h func(http.ResponseWriter, *http.Request, Cluster)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cl, r, done := s.ask(w, r, requestTimeout)
		if cl == nil {
			return
		}
		defer done()
		h(w, r, cl)
	}
}

// ask returns the cluster and r with its etcd work bounded by timeout;
// done releases the bound. While the replica starts it answers 503 and
// returns a nil cluster.
func (s *Server) ask(w http.ResponseWriter, r *http.Request, timeout time.Duration) (cl Cluster, _ *http.Request, done context.CancelFunc) {
	if s.opts.Cluster == nil {
		writeError(w, http.StatusServiceUnavailable, "starting", "the replica is still starting")
		return nil, r, func() {}
	}
	// etcd calls retry until their context ends; an API caller should
	// get an answer while etcd is away, not a hung request.
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	return s.opts.Cluster, r.WithContext(ctx), cancel
}

// requestTimeout bounds the etcd work of one API request.
const requestTimeout = 5 * time.Second

// respond writes v with status, or the error with the status it maps to.
// Unknown names are echoed clipped: the path is the client's, and as long
// as the client wants.
func respond(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err == nil {
		writeJSON(w, status, v)
		return
	}
	switch {
	case errors.Is(err, jobs.ErrUnknownJob):
		writeError(w, http.StatusNotFound, "unknown_job", unknown(r, "name", "no job ", err))
	case errors.Is(err, jobs.ErrUnknownRun):
		writeError(w, http.StatusNotFound, "unknown_run", unknown(r, "id", "no run ", err))
	case errors.Is(err, jobs.ErrFinished):
		writeError(w, http.StatusConflict, "run_finished", userMessage(err))
	case errors.Is(err, ErrUnconfirmed):
		writeError(w, http.StatusServiceUnavailable, "etcd_unavailable", unconfirmedMessage)
	case errors.Is(err, jobs.ErrBadPause):
		writeError(w, http.StatusBadRequest, "bad_pause", strings.TrimPrefix(err.Error(), jobs.ErrBadPause.Error()+": "))
	case errors.Is(err, jobs.ErrBadConcurrencyKey):
		writeError(w, http.StatusBadRequest, "bad_concurrency_key", userMessage(err))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "etcd_unavailable",
			fmt.Sprintf("etcd did not answer within %s; try again, or ask another replica", requestTimeout))
	default:
		writeError(w, http.StatusInternalServerError, "internal", userMessage(err))
	}
}

// unknown says what the engine said for people (which name, and what to
// do instead), or else which name from the path was not found.
func unknown(r *http.Request, key, prefix string, err error) string {
	var m userMessager
	if errors.As(err, &m) {
		return m.UserMessage()
	}
	if v := r.PathValue(key); v != "" {
		return prefix + quoteClip(v)
	}
	return userMessage(err)
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ErrUnconfirmed: the replica cannot confirm its view with etcd.
var ErrUnconfirmed = errors.New("api: this replica cannot confirm its view with etcd")

// unconfirmedMessage is the answer to a read while ErrUnconfirmed holds.
const unconfirmedMessage = "this replica cannot reach etcd to confirm what it knows; try again, or ask another replica"

// confirmed answers 503 etcd_unavailable instead of running h while the
// cluster cannot confirm its view: a dead leader or slots long released
// must not be reported as current.
func confirmed(h func(http.ResponseWriter, *http.Request, Cluster)) func(http.ResponseWriter, *http.Request, Cluster) {
	return func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		if err := cl.Confirm(r.Context()); err != nil {
			respond(w, r, 0, nil, err)
			return
		}
		h(w, r, cl)
	}
}
