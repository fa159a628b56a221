package api

import (
	"context"
	"net/http"
	"time"
)

// healthz answers 200 while the process serves HTTP. It does not look at
// etcd: a liveness probe that failed on an etcd outage would restart every
// replica at once and turn a store hiccup into a scheduler outage.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when Ready says so: etcd is reachable, the
// session is alive and the replica is not shutting down.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready == nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "starting")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.opts.Ready(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if s.opts.Status == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "status not available yet")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	writeJSON(w, http.StatusOK, s.opts.Status(ctx))
}
