package api

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorize wraps h so it needs "Authorization: Bearer <token>" when a token
// is configured. The comparison takes the same time whatever the guess.
func (s *Server) authorize(h http.HandlerFunc, mutating bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := s.token()
		if token == "" || (!mutating && !s.opts.ProtectReads) {
			h(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		h(w, r)
	}
}
