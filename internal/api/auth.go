package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/etcdsched/scheduler/config"
)

// auth is what requests are checked against; it changes on reload.
type auth struct {
	token        string // the admin token; empty: none
	scoped       []scopedToken
	protectReads bool
}

// scopedToken is a configured api.tokens entry with the secret its file
// held (docs/configuration.md, "Teams and tokens").
type scopedToken struct {
	config.Token
	secret string
}

// on reports whether any token is configured: without one, the API is open.
func (a auth) on() bool { return a.token != "" || len(a.scoped) > 0 }

// SetAuth (re)reads the admin token from tokenFile and decides whether
// reads need a token too; it keeps no scoped tokens. See Configure.
func (s *Server) SetAuth(tokenFile string, protectReads bool) error {
	return s.Configure(config.API{TokenFile: tokenFile, ProtectReads: protectReads})
}

// Configure (re)reads every token file of a: the admin token_file and the
// file of each scoped token. On any error nothing changes, so a reload with
// a missing token file keeps the old tokens rather than opening the API or
// locking a team out. Errors name the token and its file, never a token.
func (s *Server) Configure(a config.API) error {
	next := auth{protectReads: a.ProtectReads}
	if a.TokenFile != "" {
		tok, err := readToken(a.TokenFile)
		if err != nil {
			return fmt.Errorf("api: token file: %w", err)
		}
		next.token = tok
	}
	for _, t := range a.Tokens {
		tok, err := readToken(t.File)
		if err != nil {
			return fmt.Errorf("api: token %q: %w", t.Name, err)
		}
		next.scoped = append(next.scoped, scopedToken{Token: t, secret: tok})
	}
	s.mu.Lock()
	s.auth = next
	s.mu.Unlock()
	return nil
}

func readToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return tok, nil
}

func (s *Server) currentAuth() auth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth
}

// carried reports whether r carries the admin token. Without a token
// configured nobody carries one.
func (a auth) carried(r *http.Request) bool {
	got, ok := bearer(r)
	return a.token != "" && ok && same(got, a.token)
}

// identify finds who r's bearer token belongs to: the admin (tok nil,
// admin true), a scoped token, or nobody (found false). Every configured
// token is compared, whichever matches, so the time taken does not say
// which one matched.
func (a auth) identify(r *http.Request) (tok *config.Token, admin, found bool) {
	got, ok := bearer(r)
	if !ok {
		return nil, false, false
	}
	if a.token != "" && same(got, a.token) {
		admin, found = true, true
	}
	for i := range a.scoped {
		if same(got, a.scoped[i].secret) && !found {
			tok, found = &a.scoped[i].Token, true
		}
	}
	return tok, admin, found
}

func bearer(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// same compares in constant time: ConstantTimeCompare takes the same time
// whatever the guess's content; only a length mismatch returns early, and
// the length of a token is not the secret.
func same(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// refusedWhy tells a request without the token from one with a wrong one:
// the first must send it, the second must send another.
func refusedWhy(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return "this request needs the API token: send \"Authorization: Bearer <token>\" (the CLI's --token-file FILE)"
	}
	return "the bearer token was refused: it is not the cluster's api.token_file; check the token you sent (the CLI's --token-file FILE)"
}
