package api

import (
	"errors"
	"net/http"

	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// The handlers of the cluster routes, in the order of docs/api.md. Each is
// wired in clusterRoutes, where its checks (auth, body size, job name, a
// confirmed view) are listed.

// leader serves GET /api/v1/leader: 503 no_leader while nobody leads.
func (s *Server) leader(w http.ResponseWriter, r *http.Request, cl Cluster) {
	l, err := cl.Leader(r.Context())
	if errors.Is(err, election.ErrNoLeader) {
		writeError(w, http.StatusServiceUnavailable, "no_leader", "no replica leads right now")
		return
	}
	respond(w, r, http.StatusOK, l, err)
}

// members serves GET /api/v1/members.
func (s *Server) members(w http.ResponseWriter, r *http.Request, cl Cluster) {
	m, err := cl.Members(r.Context())
	respond(w, r, http.StatusOK, nonNil(m), err)
}

// slots serves GET /api/v1/slots: the held slots, then the rate windows.
func (s *Server) slots(w http.ResponseWriter, r *http.Request, cl Cluster) {
	list, err := cl.Slots(r.Context())
	respond(w, r, http.StatusOK, nonNil(s.readableSlots(r.Context(), list)), err)
}

// jobs serves GET /api/v1/jobs, a page of the configured jobs, or with
// ?removed=true the removed jobs whose history is kept.
func (s *Server) jobs(w http.ResponseWriter, r *http.Request, cl Cluster) {
	if removed, ok := removedOf(w, r); !ok {
		return
	} else if removed {
		list, err := cl.RemovedJobs(r.Context())
		respond(w, r, http.StatusOK, nonNil(readableRemoved(r.Context(), list)), err)
		return
	}
	page, ok := pageOf(w, r, 0, "after")
	if !ok {
		return
	}
	j, next, err := cl.Jobs(r.Context(), page)
	if err == nil {
		s.redactAll(r, j)
		setNext(w, r, next, "after")
	}
	respond(w, r, http.StatusOK, nonNil(j), err)
}

// job serves GET /api/v1/jobs/{name}.
func (s *Server) job(w http.ResponseWriter, r *http.Request, cl Cluster) {
	j, err := cl.Job(r.Context(), r.PathValue("name"))
	s.redact(r, &j)
	respond(w, r, http.StatusOK, j, err)
}

// runs serves GET /api/v1/jobs/{name}/runs, a page of the job's history,
// newest first.
func (s *Server) runs(w http.ResponseWriter, r *http.Request, cl Cluster) {
	page, ok := pageOf(w, r, defaultRunsLimit, "before")
	if !ok {
		return
	}
	recs, next, err := cl.Runs(r.Context(), r.PathValue("name"), page)
	if err == nil {
		setNext(w, r, next, "before")
	}
	respond(w, r, http.StatusOK, nonNil(recs), err)
}

// run serves GET /api/v1/runs/{id}.
func (s *Server) run(w http.ResponseWriter, r *http.Request, cl Cluster) {
	run, err := cl.FindRun(r.Context(), r.PathValue("id"))
	respond(w, r, http.StatusOK, run, err)
}

// trigger serves POST /api/v1/jobs/{name}/trigger: 202 with the new run's
// id, or 200 for a repeat of an idempotency key that created a run.
func (s *Server) trigger(w http.ResponseWriter, r *http.Request) {
	req, code, msg := parseTrigger(r.Body)
	if code != "" {
		writeError(w, statusOf(code), code, msg)
		return
	}
	cl, r, done := s.ask(w, r, requestTimeout)
	if cl == nil {
		return
	}
	defer done()
	id, dup, err := cl.Trigger(r.Context(), r.PathValue("name"), jobs.TriggerRequest{Input: req.Input, IdempotencyKey: req.IdempotencyKey})
	if dup {
		// A repeat of a trigger that created the run: nothing new.
		respond(w, r, http.StatusOK, wire.Triggered{RunID: id, Duplicate: true}, err)
		return
	}
	respond(w, r, http.StatusAccepted, wire.Triggered{RunID: id}, err)
}

// pause serves POST /api/v1/jobs/{name}/pause and answers the job as it
// now stands.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	req, msg := parsePause(r.Body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "bad_body", msg)
		return
	}
	cl, r, done := s.ask(w, r, requestTimeout)
	if cl == nil {
		return
	}
	defer done()
	j, err := cl.Pause(r.Context(), r.PathValue("name"), req)
	s.redact(r, &j)
	respond(w, r, http.StatusOK, j, err)
}

// resume serves POST /api/v1/jobs/{name}/resume and answers the job as it
// now stands.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, cl Cluster) {
	j, err := cl.Resume(r.Context(), r.PathValue("name"))
	s.redact(r, &j)
	respond(w, r, http.StatusOK, j, err)
}

// cancel serves POST /api/v1/runs/{id}/cancel: 202, the cancellation is
// requested; the run's end records it.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	reason, msg := parseCancel(r.Body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "bad_body", msg)
		return
	}
	cl, r, done := s.ask(w, r, requestTimeout)
	if cl == nil {
		return
	}
	defer done()
	err := cl.Cancel(r.Context(), r.PathValue("id"), reason)
	respond(w, r, http.StatusAccepted, wire.Cancelled{RunID: r.PathValue("id"), Status: wire.CancelRequested}, err)
}
