// Package session keeps a replica's etcd lease alive and says, from the
// replica's own side, the latest moment at which anything bound to the lease
// can still be trusted.
//
// etcd's concurrency.Session closes Done() only after the client's keepalive
// deadline, which is measured from when a response arrived. The server,
// though, counts the TTL from when it received the request, so the client can
// believe in a lease the server has already expired. Session therefore sends
// its own keepalives, remembers the send time of each acknowledged one, and
// ends at last_acknowledged_send + TTL - margin (docs/design.md#the-safety-rules, rule 5), or earlier when
// the library's session ends.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

var (
	// ErrGuardExpired: no keepalive was acknowledged in time, so the lease
	// may expire on the server within the margin.
	ErrGuardExpired error = &userError{"session: lease guard deadline passed", slotUntrusted}
	// ErrLeaseGone: the server says the lease no longer exists, or etcd's
	// client library ended its session first (it gives up a TTL after its
	// own last answer, which can be older than the guard's last
	// acknowledged send).
	ErrLeaseGone error = &userError{"session: lease expired or revoked", slotUntrusted}
	// ErrClosed: the session was closed by its owner.
	ErrClosed = errors.New("session: closed")
)

// slotUntrusted is what a run stopped by ErrGuardExpired or ErrLeaseGone
// reads in its record (docs/operations.md).
const slotUntrusted = "this replica's etcd session could have expired, so the run was stopped before another replica could take its slot"

// userError is an error with a sentence for the person reading a run's
// record besides its text for logs.
type userError struct{ text, user string }

func (e *userError) Error() string       { return e.text }
func (e *userError) UserMessage() string { return e.user }

// Options configure a session.
type Options struct {
	// TTL of the lease; etcd counts in whole seconds, so it is rounded up.
	TTL time.Duration
	// Margin is how long before the earliest possible server-side expiry the
	// session is declared lost. It must be below TTL.
	Margin time.Duration
	Clock  clockwork.Clock
	Logger *slog.Logger
}

func (o *Options) check() error {
	if o.TTL < time.Second {
		return fmt.Errorf("session: ttl %s must be at least 1s", o.TTL)
	}
	if o.Margin <= 0 || o.Margin >= o.TTL {
		return fmt.Errorf("session: margin %s must be greater than 0 and less than ttl %s", o.Margin, o.TTL)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Session is one lease and its guard.
type Session struct {
	client *clientv3.Client
	cs     *concurrency.Session
	opts   Options
	ttl    time.Duration // as granted by the server

	mu       sync.Mutex
	deadline time.Time
	moved    chan struct{} // closed and replaced when deadline moves

	ctx    context.Context // cancelled with the loss cause
	cancel context.CancelCauseFunc
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// New grants a lease and starts keeping it alive. The returned session ends
// (Done) on its own; ctx bounds only the grant.
func New(ctx context.Context, client *clientv3.Client, opts Options) (*Session, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	seconds := int64((opts.TTL + time.Second - 1) / time.Second)
	sent := opts.Clock.Now()
	grant, err := client.Grant(ctx, seconds)
	if err != nil {
		return nil, fmt.Errorf("session: grant lease: %w", err)
	}
	// Keep the library's session: concurrency.Election needs one. Its own
	// keepalives only ever extend the lease, which our bound stays below.
	loopCtx, stop := context.WithCancel(context.Background())
	cs, err := concurrency.NewSession(client, concurrency.WithLease(grant.ID), concurrency.WithContext(loopCtx))
	if err != nil {
		stop()
		revokeCtx, cancel := context.WithTimeout(context.Background(), opts.TTL)
		_, _ = client.Revoke(revokeCtx, grant.ID)
		cancel()
		return nil, fmt.Errorf("session: start keepalive: %w", err)
	}
	s := &Session{
		client: client,
		cs:     cs,
		opts:   opts,
		ttl:    time.Duration(grant.TTL) * time.Second,
		moved:  make(chan struct{}),
		stop:   stop,
	}
	s.deadline = sent.Add(s.ttl - opts.Margin)
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.wg.Add(2)
	go s.keepAlive(loopCtx)
	go s.guard(loopCtx)
	opts.Logger.Debug("session started", "lease", int64(grant.ID), "ttl", s.ttl)
	return s, nil
}

// Lease is the lease id every session-bound key is put with.
func (s *Session) Lease() clientv3.LeaseID { return s.cs.Lease() }

// Client is the etcd client of the session.
func (s *Session) Client() *clientv3.Client { return s.client }

// Concurrency is the library session, for concurrency.NewElection.
func (s *Session) Concurrency() *concurrency.Session { return s.cs }

// TTL is the lease TTL the server granted.
func (s *Session) TTL() time.Duration { return s.ttl }

// Done closes when the lease can no longer be trusted.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Context is cancelled when Done closes; context.Cause says why. Work bound
// to the lease derives its context from it.
func (s *Session) Context() context.Context { return s.ctx }

// Err is nil while the session is alive, then the reason it ended.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// Deadline is last_acknowledged_send + TTL - margin: the moment the session
// ends unless another keepalive is acknowledged first.
func (s *Session) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// Expired reports whether the guard's deadline is behind the clock, whether
// or not the guard has ended the session yet. After a process pause longer
// than the TTL, the guard's timer and whatever else waited (a run's start)
// come due at once and run in any order; what is about to act on the lease
// asks this first, instead of trusting a guard that has not run yet.
func (s *Session) Expired() bool { return !guardDisabled && s.deadlinePassed() }

// deadlinePassed reports whether the guard's deadline is behind the clock.
func (s *Session) deadlinePassed() bool {
	return !s.opts.Clock.Now().Before(s.Deadline())
}

// expire ends the session because its guard's deadline passed.
func (s *Session) expire() {
	s.opts.Logger.Warn("lease guard expired", "lease", int64(s.Lease()), "deadline", s.Deadline())
	s.cancel(ErrGuardExpired)
}

// Close ends the session and revokes the lease, so every key bound to it is
// deleted at once instead of after the TTL.
func (s *Session) Close(ctx context.Context) error {
	s.end(ErrClosed)
	_, err := s.client.Revoke(ctx, s.Lease())
	if err != nil {
		return fmt.Errorf("session: revoke lease %x: %w", int64(s.Lease()), err)
	}
	return nil
}

// Orphan ends the session without revoking: keys stay until the TTL.
func (s *Session) Orphan() { s.end(ErrClosed) }

func (s *Session) end(cause error) {
	s.cancel(cause)
	s.stop()
	s.cs.Orphan()
	s.wg.Wait()
}

// keepAlive sends a keepalive three times per guarded window, on a fixed
// beat: a send does not wait for the previous answer, so a slow round trip
// (up to about two thirds of the window) does not end a healthy session,
// while the deadline still counts from the send time of each answered one.
func (s *Session) keepAlive(ctx context.Context) {
	defer s.wg.Done()
	interval := max((s.ttl-s.opts.Margin)/3, 50*time.Millisecond)
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	outstanding := 0
	done := make(chan struct{}, maxInFlight)
	for {
		if outstanding < maxInFlight {
			outstanding++
			inFlight.Add(1)
			go func() {
				defer inFlight.Done()
				s.sendKeepAlive(ctx)
				done <- struct{}{}
			}()
		}
		tick := s.opts.Clock.After(interval)
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				outstanding--
			case <-tick:
				break wait
			}
		}
	}
}

// maxInFlight bounds the keepalives awaiting an answer.
const maxInFlight = 3

// sendKeepAlive sends one keepalive and, when it is answered, moves the
// deadline to its send time + TTL - margin.
func (s *Session) sendKeepAlive(ctx context.Context) {
	sent := s.opts.Clock.Now()
	// An answer can move the deadline to at most sent + TTL - margin, so it
	// is worth waiting for until then, even past the current deadline: an
	// earlier keepalive's answer may move that meanwhile.
	callCtx, cancel := context.WithDeadline(ctx, sent.Add(s.ttl-s.opts.Margin))
	defer cancel()
	resp, err := s.client.KeepAliveOnce(callCtx, s.Lease())
	switch {
	case err == nil:
		s.extend(sent.Add(time.Duration(resp.TTL)*time.Second - s.opts.Margin))
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		// Stopped, or the guard ends the session at the deadline.
	case isLeaseGone(err):
		s.cancel(ErrLeaseGone)
	default:
		s.opts.Logger.Warn("keepalive failed", "lease", int64(s.Lease()), "err", err)
	}
}

func (s *Session) extend(deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if deadline.After(s.deadline) {
		s.deadline = deadline
		close(s.moved)
		s.moved = make(chan struct{})
	}
}

// guard ends the session at the deadline, or when the library session ends
// (lease revoked, expired, the client closed, or no answer on the library's
// own keepalive stream for a TTL).
func (s *Session) guard(ctx context.Context) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		deadline, moved := s.deadline, s.moved
		s.mu.Unlock()
		wait := deadline.Sub(s.opts.Clock.Now())
		if guardDisabled {
			// test-only: the positive control of test/fault (build tag
			// unsafe_noguard) keeps only the library session's end.
			wait = time.Hour
		}
		if wait <= 0 {
			s.expire()
			return
		}
		timer := s.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.cs.Done():
			timer.Stop()
			// A goroutine that ran late (a loaded machine) can find the
			// library session ended and its own deadline passed at once;
			// select picks either. The deadline came first: say so.
			if s.deadlinePassed() && !guardDisabled {
				s.expire()
				return
			}
			s.cancel(ErrLeaseGone)
			return
		case <-moved:
			timer.Stop()
		case <-timer.Chan():
		}
	}
}
