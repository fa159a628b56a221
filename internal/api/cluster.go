package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Cluster is what the API asks of the scheduler; the replica provides it.
type Cluster interface {
	Leader(ctx context.Context) (election.Leader, error)
	Members(ctx context.Context) ([]election.Member, error)
	Slots() []slots.Info
	Jobs(ctx context.Context) ([]jobs.JobStatus, error)
	Job(ctx context.Context, name string) (jobs.JobStatus, error)
	Runs(ctx context.Context, job string, limit int) ([]runs.Record, error)
	FindRun(ctx context.Context, runID string) (jobs.RunStatus, error)
	Trigger(ctx context.Context, job string) (string, error)
	Pause(ctx context.Context, job string) (jobs.JobStatus, error)
	Resume(ctx context.Context, job string) (jobs.JobStatus, error)
	Cancel(ctx context.Context, runID, reason string) error
}

const (
	defaultRunsLimit = 20
	maxRunsLimit     = 1000
)

func (s *Server) clusterRoutes(read, write func(http.HandlerFunc) http.HandlerFunc) {
	c := s.cluster
	s.mux.HandleFunc("GET /api/v1/leader", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		l, err := cl.Leader(r.Context())
		if errors.Is(err, election.ErrNoLeader) {
			writeError(w, http.StatusServiceUnavailable, "no_leader", "no replica leads right now")
			return
		}
		respond(w, http.StatusOK, l, err)
	})))
	s.mux.HandleFunc("GET /api/v1/members", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		m, err := cl.Members(r.Context())
		respond(w, http.StatusOK, nonNil(m), err)
	})))
	s.mux.HandleFunc("GET /api/v1/slots", read(c(func(w http.ResponseWriter, _ *http.Request, cl Cluster) {
		writeJSON(w, http.StatusOK, nonNil(cl.Slots()))
	})))
	s.mux.HandleFunc("GET /api/v1/jobs", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		j, err := cl.Jobs(r.Context())
		respond(w, http.StatusOK, nonNil(j), err)
	})))
	s.mux.HandleFunc("GET /api/v1/jobs/{name}", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		j, err := cl.Job(r.Context(), r.PathValue("name"))
		respond(w, http.StatusOK, j, err)
	})))
	s.mux.HandleFunc("GET /api/v1/jobs/{name}/runs", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		limit := defaultRunsLimit
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxRunsLimit {
				writeError(w, http.StatusBadRequest, "bad_limit", "limit must be a whole number from 1 to "+strconv.Itoa(maxRunsLimit)+", got "+strconv.Quote(v))
				return
			}
			limit = n
		}
		recs, err := cl.Runs(r.Context(), r.PathValue("name"), limit)
		respond(w, http.StatusOK, nonNil(recs), err)
	})))
	s.mux.HandleFunc("GET /api/v1/runs/{id}", read(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		run, err := cl.FindRun(r.Context(), r.PathValue("id"))
		respond(w, http.StatusOK, run, err)
	})))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/trigger", write(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		id, err := cl.Trigger(r.Context(), r.PathValue("name"))
		respond(w, http.StatusAccepted, map[string]string{"run_id": id}, err)
	})))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/pause", write(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		j, err := cl.Pause(r.Context(), r.PathValue("name"))
		respond(w, http.StatusOK, j, err)
	})))
	s.mux.HandleFunc("POST /api/v1/jobs/{name}/resume", write(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		j, err := cl.Resume(r.Context(), r.PathValue("name"))
		respond(w, http.StatusOK, j, err)
	})))
	s.mux.HandleFunc("POST /api/v1/runs/{id}/cancel", write(c(func(w http.ResponseWriter, r *http.Request, cl Cluster) {
		reason := "cancelled through the API"
		var body struct {
			Reason string `json:"reason"`
		}
		if b, _ := io.ReadAll(io.LimitReader(r.Body, 4096)); len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				writeError(w, http.StatusBadRequest, "bad_body", "body must be JSON like {\"reason\": \"...\"}: "+err.Error())
				return
			}
			if body.Reason != "" {
				reason = body.Reason
			}
		}
		err := cl.Cancel(r.Context(), r.PathValue("id"), reason)
		respond(w, http.StatusAccepted, map[string]string{"run_id": r.PathValue("id"), "status": "cancel requested"}, err)
	})))
}

// cluster adapts a handler that needs the cluster; 503 until it is wired.
func (s *Server) cluster(h func(http.ResponseWriter, *http.Request, Cluster)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Cluster == nil {
			writeError(w, http.StatusServiceUnavailable, "starting", "the replica is still starting")
			return
		}
		// etcd calls retry until their context ends; an API caller should
		// get an answer while etcd is away, not a hung request.
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		h(w, r.WithContext(ctx), s.opts.Cluster)
	}
}

// requestTimeout bounds the etcd work of one API request.
const requestTimeout = 5 * time.Second

// respond writes v with status, or the error with the status it maps to.
func respond(w http.ResponseWriter, status int, v any, err error) {
	if err == nil {
		writeJSON(w, status, v)
		return
	}
	switch {
	case errors.Is(err, jobs.ErrUnknownJob):
		writeError(w, http.StatusNotFound, "unknown_job", err.Error())
	case errors.Is(err, jobs.ErrUnknownRun):
		writeError(w, http.StatusNotFound, "unknown_run", err.Error())
	case errors.Is(err, jobs.ErrFinished):
		writeError(w, http.StatusConflict, "run_finished", err.Error())
	case errors.Is(err, jobs.ErrBadConcurrencyKey):
		writeError(w, http.StatusBadRequest, "bad_concurrency_key", err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "etcd_unavailable", "etcd did not answer in time: "+err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
