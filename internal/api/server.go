// Package api is a replica's HTTP face: the JSON API of SPEC section 8, the
// health and readiness probes, Prometheus metrics and the dashboard.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/internal/api/dashboard"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Status is what GET /api/v1/status says about this replica.
type Status struct {
	ID              string    `json:"id"`
	Version         string    `json:"version"`
	IsLeader        bool      `json:"is_leader"`
	ConfigFile      string    `json:"config_file"`
	ConfigHash      string    `json:"config_hash"`
	LastReloadError string    `json:"last_reload_error,omitempty"`
	LastReloadAt    time.Time `json:"last_reload_at,omitzero"`
	StartedAt       time.Time `json:"started_at"`
	EtcdEndpoints   []string  `json:"etcd_endpoints"`
	EmbeddedEtcd    bool      `json:"embedded_etcd"`
}

// Options wire the server to the rest of the replica. Nil sources answer 503.
type Options struct {
	Listen       string
	TokenFile    string
	ProtectReads bool
	Logger       *slog.Logger
	Gatherer     prometheus.Gatherer
	Status       func() Status
	// Ready says whether etcd is reachable and the session alive.
	Ready   func(ctx context.Context) error
	Cluster Cluster
}

// Server serves the API on one listener.
type Server struct {
	opts Options
	mux  *http.ServeMux
	ln   net.Listener
	http *http.Server

	mu  sync.Mutex
	tok string
}

// New reads the token file and builds the routes.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	if err := s.LoadToken(opts.TokenFile); err != nil {
		return nil, err
	}
	s.routes()
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// LoadToken (re)reads the bearer token; an empty path turns auth off.
func (s *Server) LoadToken(path string) error {
	var tok string
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("api: token file: %w", err)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return fmt.Errorf("api: token file %s is empty", path)
		}
	}
	s.mu.Lock()
	s.tok = tok
	s.mu.Unlock()
	return nil
}

func (s *Server) token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tok
}

// SetCluster wires the cluster endpoints; call it before Serve.
func (s *Server) SetCluster(c Cluster) { s.opts.Cluster = c }

// Handler is the whole API, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.mux }

// Listen binds the address, so the replica knows its API address (a port 0
// becomes a real one) before it registers as a member.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", s.opts.Listen, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve answers requests until Shutdown.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for requests in flight, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}

func (s *Server) routes() {
	read := func(h http.HandlerFunc) http.HandlerFunc { return s.authorize(h, false) }
	write := func(h http.HandlerFunc) http.HandlerFunc { return s.authorize(h, true) }

	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.opts.Gatherer != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{}))
	}
	s.mux.HandleFunc("GET /api/v1/status", read(s.status))
	s.clusterRoutes(read, write)
	s.mux.Handle("GET /", dashboard.Handler())
	s.mux.HandleFunc("GET /api/", s.notFound)
	s.mux.HandleFunc("/", s.notFound)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
}
