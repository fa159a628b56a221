package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// Manager keeps one live session for a replica and replaces it after a
// loss, so election, membership and slots share one lease and all start over
// together when it goes.
type Manager struct {
	client *clientv3.Client
	opts   Options
	lost   prometheus.Counter

	mu      sync.Mutex
	current *Session
	changed chan struct{} // closed and replaced when current changes
}

// NewManager checks the options; Run does the work. reg may be nil.
func NewManager(client *clientv3.Client, opts Options, reg prometheus.Registerer) (*Manager, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	m := &Manager{
		client: client,
		opts:   opts,
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_session_lost_total",
			Help: "Sessions (etcd leases) this replica lost before closing them itself.",
		}),
		changed: make(chan struct{}),
	}
	if reg != nil {
		if err := reg.Register(m.lost); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Run creates sessions until ctx ends, then revokes the live one. Cancel ctx
// only after the work bound to the session has released what it holds.
func (m *Manager) Run(ctx context.Context) error {
	retry := grantRetry(m.opts.TTL).Start()
	for {
		// Bounded, so an etcd that never answers shows up as a logged,
		// retried failure rather than a silent wait.
		grantCtx, cancelGrant := context.WithTimeout(ctx, m.opts.TTL)
		s, err := New(grantCtx, m.client, m.opts)
		cancelGrant()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.opts.Logger.Warn("cannot create session; retrying", "err", err, "in", retry.Delay())
			if !retry.Wait(ctx, m.opts.Clock) {
				return nil
			}
			continue
		}
		retry.Reset()
		m.set(s)
		m.opts.Logger.Info("session started", "lease", int64(s.Lease()), "ttl", s.TTL())
		select {
		case <-s.Done():
			m.lost.Inc()
			m.opts.Logger.Warn("session lost", "lease", int64(s.Lease()), "cause", s.Err())
			s.Orphan()
			m.set(nil)
		case <-ctx.Done():
			m.set(nil)
			revokeCtx, cancel := context.WithTimeout(context.Background(), m.opts.TTL)
			err := s.Close(revokeCtx)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				m.opts.Logger.Warn("revoke on shutdown failed; lease left to expire", "err", err)
			}
			return nil
		}
	}
}

func (m *Manager) set(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current = s
	close(m.changed)
	m.changed = make(chan struct{})
}

// Current waits for a live session.
func (m *Manager) Current(ctx context.Context) (*Session, error) {
	for {
		m.mu.Lock()
		s, changed := m.current, m.changed
		m.mu.Unlock()
		if s != nil && s.Err() == nil {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
	}
}

// Alive reports whether a live session exists right now (for /readyz).
func (m *Manager) Alive() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current != nil && m.current.Err() == nil
}

// grantRetry spaces out the attempts to create a session against an etcd
// that fails: from 100ms (a grant is one request, cheap to repeat), up to
// the TTL (an etcd down for longer has expired every lease anyway), half of
// each delay random so the replicas that lost their sessions together do
// not all grant again at once.
func grantRetry(ttl time.Duration) backoff.Policy {
	return backoff.Policy{Min: 100 * time.Millisecond, Max: ttl, Jitter: 0.5}
}
