// Package api is a replica's HTTP face: the JSON API of docs/api.md, the
// health and readiness probes, Prometheus metrics and the dashboard.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/api/dashboard"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Status is what GET /api/v1/status says about this replica.
type Status = wire.Status

// Options wire the server to the rest of the replica. Nil sources answer 503.
type Options struct {
	Listen       string
	TokenFile    string
	ProtectReads bool
	// Tokens are the scoped tokens (docs/configuration.md, "Teams and tokens").
	Tokens []config.Token
	// Registerer takes scheduler_api_requests_total; nil: not exported.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Gatherer   prometheus.Gatherer
	Status     func(ctx context.Context) Status
	// Ready says whether etcd is reachable and the session alive.
	Ready   func(ctx context.Context) error
	Cluster Cluster
	// Config is the config this replica applies (GET /api/v1/config).
	Config func() Applied
}

// Server serves the API on one listener.
type Server struct {
	opts Options
	mux  *http.ServeMux
	ln   net.Listener
	http *http.Server

	mu   sync.Mutex
	auth auth

	requests *prometheus.CounterVec
}

// New reads the token file and builds the routes.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, mux: http.NewServeMux()}
	if err := s.Configure(config.API{TokenFile: opts.TokenFile, ProtectReads: opts.ProtectReads, Tokens: opts.Tokens}); err != nil {
		return nil, err
	}
	var err error
	if s.requests, err = newRequestMetric(opts.Registerer); err != nil {
		return nil, err
	}
	if opts.Cluster != nil {
		s.opts.Cluster = teamed{opts.Cluster, s}
	}
	s.routes()
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		// No WriteTimeout: it would cut off a long list however fast the
		// client reads. Each answer gets its own deadline instead (see
		// withWriteDeadline and writeList).
		IdleTimeout: idleTimeout,
		ErrorLog:    slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// SetCluster wires the cluster endpoints; call it before Serve.
func (s *Server) SetCluster(c Cluster) {
	s.opts.Cluster = nil
	if c != nil {
		s.opts.Cluster = teamed{c, s}
	}
}

// Handler is the whole API, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return withWriteDeadline(s) }

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

// Close releases the address at once, also when Serve never ran.
func (s *Server) Close() error {
	err := s.http.Close()
	if s.ln != nil {
		if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) && err == nil {
			err = cerr
		}
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

	// Probes stay open whatever the auth settings (see authorize).
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.opts.Gatherer != nil {
		// Metrics are a read: with protect_reads, Prometheus sends the
		// token (scrape config authorization.credentials_file).
		s.mux.Handle("GET /metrics", s.authorize(promhttp.HandlerFor(s.opts.Gatherer, promhttp.HandlerOpts{}), false))
	}
	s.mux.HandleFunc("GET /api/v1/status", read(s.status))
	s.mux.HandleFunc("GET /api/v1/config", read(s.config))
	// Profiling for the benchmark (test/bench); off unless asked for,
	// and behind the read token like every other read.
	if os.Getenv("SCHEDULER_PPROF") == "1" {
		s.mux.HandleFunc("GET /debug/pprof/", read(pprof.Index))
		s.mux.HandleFunc("GET /debug/pprof/profile", read(pprof.Profile))
	}
	s.clusterRoutes(read, write)
	// The dashboard's files by name, not "GET /": a catch-all GET
	// would make every unknown path a GET route, answering 405 to a POST
	// and the file server's text 404 to a GET. Unknown paths are
	// answered in ServeHTTP.
	page := dashboard.Handler()
	for _, p := range append([]string{"/{$}"}, dashboard.Assets()...) {
		s.mux.Handle("GET "+p, page)
	}
}
