package api

import (
	"net/http"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Applied is the config a replica applies, as Options.Config hands it over.
type Applied struct {
	Config    *config.Config
	Hash      string
	AppliedAt time.Time
}

// Headers of GET /api/v1/config (docs/api.md).
const (
	HeaderConfigHash = "X-Scheduler-Config-Hash"
	HeaderAppliedAt  = "X-Scheduler-Applied-At"
)

// config answers GET /api/v1/config: the applied config without secrets
// or per-replica settings, as YAML (a file `scheduler validate` accepts)
// unless the client asks for JSON (docs/api.md).
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	if s.opts.Config == nil {
		writeError(w, http.StatusServiceUnavailable, "starting", "the replica is still starting")
		return
	}
	a := s.opts.Config()
	w.Header().Set(HeaderConfigHash, a.Hash)
	w.Header().Set(HeaderAppliedAt, a.AppliedAt.UTC().Format(time.RFC3339Nano))
	pub := a.Config.Public()
	if !wantsJSON(r) {
		b, err := yaml.Marshal(pub)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "the config cannot be written as YAML: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	ans := wire.Config{ConfigHash: a.Hash, AppliedAt: a.AppliedAt.UTC(), Config: pub}
	// Fingerprints only for a reader who holds the token, keyed with it:
	// that reader may read the values from /api/v1/jobs anyway, and no one
	// else can test guesses against them.
	if au := s.currentAuth(); au.carried(r) {
		ans.Secrets = a.Config.SecretFingerprints([]byte(au.token))
	}
	writeJSON(w, http.StatusOK, ans)
}

// wantsJSON: JSON when the Accept header names it before (or without)
// YAML; YAML is the default.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	j := strings.Index(accept, "application/json")
	y := strings.Index(accept, "yaml")
	return j >= 0 && (y < 0 || j < y)
}
