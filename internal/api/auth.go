package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// auth is what requests are checked against; it changes on reload.
type auth struct {
	token        string // empty: no auth at all
	protectReads bool
}

// SetAuth (re)reads the bearer token from tokenFile and decides whether reads
// need it too. An empty path turns auth off. On error nothing changes, so a
// reload with a missing token file keeps the old token rather than opening
// the API.
func (s *Server) SetAuth(tokenFile string, protectReads bool) error {
	var tok string
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return fmt.Errorf("api: token file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return fmt.Errorf("api: token file %s is empty", tokenFile)
		}
	}
	s.mu.Lock()
	s.auth = auth{token: tok, protectReads: protectReads}
	s.mu.Unlock()
	return nil
}

func (s *Server) currentAuth() auth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// authorize wraps h so it needs "Authorization: Bearer <token>" when a token
// is configured: always for mutating endpoints, for reads only with
// protect_reads. The probes are never wrapped: a kubelet sends no token, and
// a probe that answered 401 would keep every replica out of service.
func (s *Server) authorize(h http.Handler, mutating bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a := s.currentAuth()
		if a.token == "" || (!mutating && !a.protectReads) {
			h.ServeHTTP(w, r)
			return
		}
		if !a.carried(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", refusedWhy(r))
			return
		}
		h.ServeHTTP(w, r)
	}
}

// carried reports whether r carries the configured token. Without a token
// configured nobody carries one.
func (a auth) carried(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// ConstantTimeCompare takes the same time whatever the guess's content;
	// only a length mismatch returns early, and the length of the token is
	// not the secret.
	return a.token != "" && ok && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

// refusedWhy tells a request without the token from one with a wrong one:
// the first must send it, the second must send another.
func refusedWhy(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return "this request needs the API token: send \"Authorization: Bearer <token>\" (the CLI's --token-file FILE)"
	}
	return "the bearer token was refused: it is not the cluster's api.token_file; check the token you sent (the CLI's --token-file FILE)"
}
