package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Token names in logs and in scheduler_api_requests_total for requests
// that carry no known token (docs/configuration.md, "Teams and tokens").
const (
	tokenNone    = "none"
	tokenUnknown = "unknown"
)

// caller is who sent a request, as authorize found: the name of its token
// and, for a scoped token, the token's scope.
type caller struct {
	name  string
	scope *config.Token // nil: admin, or no token configured
}

type callerKey struct{}

// callerOf is the caller authorize put in ctx; the zero caller (no scope)
// when there is none.
func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// mayRead reports whether the caller may read the jobs of team.
func (c caller) mayRead(team string) bool {
	return c.scope == nil || c.scope.Permits(config.VerbRead, team)
}

// verbOf names what the route of r does, as a token's allow list names
// it: every GET is read.
func verbOf(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return config.VerbRead
	}
	i := strings.LastIndexByte(r.Pattern, '/')
	return r.Pattern[i+1:]
}

// jobOf is the job a request acts on: the {name} of its path, or the job
// of its run id; empty for routes that are about no one job.
func jobOf(r *http.Request) string {
	if name := r.PathValue("name"); name != "" {
		return name
	}
	if id := r.PathValue("id"); id != "" {
		return runs.JobOf(id)
	}
	return ""
}

// teamOf is the team of the job called name in the applied config; found
// false when no such job is configured (the handler then answers 404).
func (s *Server) teamOf(name string) (team string, found bool) {
	if s.opts.Config == nil || name == "" {
		return "", false
	}
	cfg := s.opts.Config().Config
	if cfg == nil {
		return "", false
	}
	if j := cfg.Job(name); j != nil {
		return j.Team, true
	}
	return "", false
}

// authorize wraps h so that it runs only for a caller allowed to: with
// any token configured, mutating endpoints need one (reads too with
// protect_reads); a scoped token needs the route's verb in its allow list
// and the job's team in its teams. The probes are never wrapped: a kubelet
// sends no token, and a probe that answered 401 would keep every replica
// out of service.
func (s *Server) authorize(h http.Handler, mutating bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		verb, job := verbOf(r), jobOf(r)
		c := s.admit(rec, r, mutating, verb, job)
		if rec.status == 0 {
			h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		}
		code := rec.status
		if code == 0 {
			code = http.StatusOK
		}
		s.requests.WithLabelValues(c.name, verb, fmt.Sprint(code)).Inc()
		if mutating {
			// The token's name, never the token (docs/operations.md).
			s.opts.Logger.Info("api request", "token", c.name, "verb", verb, "job", job, "path", clip(r.URL.Path), "code", code)
		}
	}
}

// admit decides who the caller is and answers 401 or 403 itself when the
// caller may not go on.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, mutating bool, verb, job string) caller {
	a := s.currentAuth()
	tok, admin, found := a.identify(r)
	c := caller{name: tokenNone, scope: tok}
	switch {
	case admin:
		c.name = config.AdminToken
	case found:
		c.name = tok.Name
	case r.Header.Get("Authorization") != "":
		c.name = tokenUnknown
	}
	if !a.on() || (!mutating && !a.protectReads && !found) {
		return caller{name: c.name}
	}
	if !found {
		w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", refusedWhy(r))
		return c
	}
	if tok == nil {
		return c
	}
	if !mutating && !a.protectReads {
		// Reads are open to all: the token's scope changes nothing.
		return caller{name: c.name}
	}
	team, known := s.teamOf(job)
	if !slices.Contains(tok.Allow, verb) {
		what := ""
		if known {
			what = fmt.Sprintf(" job %s of team %s", quoteClip(job), teamName(team))
		}
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("token %q may not %s%s: its allow list is [%s]", tok.Name, verb, what, strings.Join(tok.Allow, ", ")))
		return c
	}
	if known && !tok.Covers(team) {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("token %q may not %s job %s of team %s: its teams are [%s]",
			tok.Name, verb, quoteClip(job), teamName(team), strings.Join(tok.Teams, ", ")))
	}
	return c
}

// teamName shows a team in a message; the main file's jobs have none.
func teamName(team string) string {
	if team == "" {
		return `"" (the main config file)`
	}
	return fmt.Sprintf("%q", team)
}

// statusRecorder remembers the status written, for the request metric and
// to know whether admit already answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (write
// deadlines of long lists).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// newRequestMetric registers scheduler_api_requests_total on reg; a nil
// reg keeps the counter unregistered.
func newRequestMetric(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_api_requests_total",
		Help: "API requests by the name of the token that sent them (admin, a scoped token's name, none, unknown), verb and status code.",
	}, []string{"token", "verb", "code"})
	if reg != nil {
		if err := reg.Register(v); err != nil {
			return nil, fmt.Errorf("api: register scheduler_api_requests_total: %w", err)
		}
	}
	return v, nil
}
