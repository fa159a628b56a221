package api

import (
	"net/http"

	"github.com/etcdsched/scheduler/internal/jobs"
)

// redact hides the values of the jobs' headers and environment from a
// reader without the token (SPEC section 16): reads may be open
// (protect_reads: false) while the jobs carry credentials.
func (s *Server) redact(r *http.Request, list []jobs.JobStatus) {
	if s.currentAuth().carried(r) {
		return
	}
	for i := range list {
		list[i].Spec = list[i].Spec.Redacted()
	}
}
