package api

import (
	"net/http"

	"github.com/etcdsched/scheduler/internal/jobs"
)

// redact hides the values of the jobs' headers and environment from a
// reader without the token (docs/design-edges.md#operating-at-the-edges): reads may be open
// (protect_reads: false) while the jobs carry credentials.
func (s *Server) redact(r *http.Request, list ...*jobs.JobStatus) {
	if s.currentAuth().carried(r) {
		return
	}
	for _, j := range list {
		j.Spec = j.Spec.Redacted()
	}
}

// redactAll is redact for a listing.
func (s *Server) redactAll(r *http.Request, list []jobs.JobStatus) {
	for i := range list {
		s.redact(r, &list[i])
	}
}
