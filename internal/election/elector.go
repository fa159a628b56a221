// Package election decides which replica leads, on etcd's
// concurrency.Election, and keeps the list of live replicas.
//
// A win is only trusted once it is confirmed against etcd, leader-only work
// runs under a context that ends the moment the term ends, and every write
// the leader makes is fenced by the term's election key (docs/design.md#the-safety-rules, rules 1 and 8).
package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/session"
)

// ErrRunning: Run was called while another Run of the same Elector is active.
var ErrRunning = errors.New("election: already running")

// Elector campaigns for one replica.
type Elector struct {
	client   *clientv3.Client
	sessions *session.Manager
	cfg      Config
	value    string // leader record
	log      *slog.Logger
	metrics  *metrics
	observer *observer

	running atomic.Bool
	mu      sync.Mutex
	term    *Leadership // the confirmed leadership while lead runs and it holds
}

// New checks cfg and registers the metrics on reg (which may be nil); Run
// does the work.
func New(client *clientv3.Client, sessions *session.Manager, cfg Config, reg prometheus.Registerer) (*Elector, error) {
	if client == nil || sessions == nil {
		return nil, errors.New("election: client and session manager are required")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	value, err := json.Marshal(record{ID: cfg.ID, APIAddr: cfg.APIAddr})
	if err != nil {
		return nil, fmt.Errorf("election: encode leader record: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "election", "id", cfg.ID)
	return &Elector{
		client:   client,
		sessions: sessions,
		cfg:      cfg,
		value:    string(value),
		log:      log,
		metrics:  m,
		observer: newObserver(client, electionPrefix(cfg.Prefix), cfg.Clock, log, m),
	}, nil
}

// Run campaigns until ctx ends and returns nil then.
//
// On a confirmed win it calls lead with a context that is cancelled the
// moment the term ends: the election key is deleted or replaced, the session
// ends, or ctx ends. lead must return promptly after that; only then does Run
// resign, so two replicas never run leader work at once through a handoff.
// After a term Run campaigns again, with a new session if the old one was
// lost. While Run is active it also keeps the view behind Leader current.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, l Leadership)) error {
	if lead == nil {
		return errors.New("election: lead function is required")
	}
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.observer.run(ctx)
	}()

	retry := etcdRetry.Start()
	for {
		s, err := e.sessions.Current(ctx)
		if err != nil {
			return nil // ctx ended
		}
		el, l, err := e.campaign(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			e.log.Warn("campaign failed; retrying", "err", err, "lease", int64(s.Lease()))
			retry.WaitOr(ctx, e.cfg.Clock, s.Done())
			continue
		}
		retry.Reset()
		e.hold(ctx, s, el, l, lead)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// campaign waits until this session wins and confirms the win. The wait is
// abandoned when the session ends: a candidate whose lease is gone cannot
// win, and the next session should queue up at once.
//
// When its context is cancelled, etcd's Campaign deletes the candidate key
// under the client's own context, so with etcd unreachable that cleanup
// lasts until the connection fails or the client closes; give the client
// gRPC keepalives (DialKeepAliveTime) so a dead connection fails.
func (e *Elector) campaign(ctx context.Context, s *session.Session) (*concurrency.Election, Leadership, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.Context(), cancel)()

	pfx := strings.TrimSuffix(electionPrefix(e.cfg.Prefix), "/") // NewElection appends the "/"
	el := concurrency.NewElection(s.Concurrency(), pfx)
	if err := el.Campaign(cctx, e.value); err != nil {
		return nil, Leadership{}, fmt.Errorf("election: campaign: %w", err)
	}
	l := Leadership{Key: el.Key(), Rev: el.Rev(), Lease: s.Lease()}
	if err := e.confirm(cctx, s, l); err != nil {
		e.resign(ctx, s, el)
		return nil, Leadership{}, err
	}
	if err := e.proclaim(cctx, el); err != nil {
		if errors.Is(err, concurrency.ErrElectionNotLeader) {
			e.resign(ctx, s, el)
			return nil, Leadership{}, fmt.Errorf("%w: %w", ErrNotConfirmed, err)
		}
		// The term stands; replicas report when they saw it instead.
		e.log.Warn("cannot record when the term was won", "err", err, "leader_rev", l.Rev)
	}
	return el, l, nil
}

// proclaim rewrites the term's key with the time it was won, so that every
// replica, whenever it started watching, reports the same since (docs/design-edges.md#when-the-leader-won-apiv1leader-since). Proclaim is fenced by the key's create revision.
func (e *Elector) proclaim(ctx context.Context, el *concurrency.Election) error {
	v, err := json.Marshal(record{ID: e.cfg.ID, APIAddr: e.cfg.APIAddr, Since: e.cfg.Clock.Now().UTC()})
	if err != nil {
		return fmt.Errorf("election: encode leader record: %w", err)
	}
	if err := el.Proclaim(ctx, string(v)); err != nil {
		return fmt.Errorf("election: proclaim the win: %w", err)
	}
	return nil
}

// confirm checks with etcd that l's key is the oldest under the prefix, with
// l's create revision, and then that the session still stands. Campaign
// cannot be trusted on either: it returns once older keys are gone, even if
// its own key went with an expired lease while it waited.
func (e *Elector) confirm(ctx context.Context, s *session.Session, l Leadership) error {
	resp, err := s.Client().Get(ctx, electionPrefix(e.cfg.Prefix), clientv3.WithFirstCreate()...)
	if err != nil {
		return fmt.Errorf("election: confirm: %w", err)
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Key) != l.Key || resp.Kvs[0].CreateRevision != l.Rev {
		e.log.Warn("campaign returned, but our key is not the leader's", "key", l.Key, "leader_rev", l.Rev)
		return ErrNotConfirmed
	}
	// Checked after the read: the key existed at a moment when the session
	// was still trusted, which is what the lease guard promises.
	if err := s.Err(); err != nil {
		return fmt.Errorf("%w: session ended: %w", ErrNotConfirmed, err)
	}
	return nil
}

// resign deletes the term's key, fenced by its create revision, under a
// fresh context: it runs when ctx has ended, and it is what lets a standby
// take over in milliseconds instead of a TTL. Past the TTL the lease is gone
// anyway, so that bounds it.
func (e *Elector) resign(ctx context.Context, s *session.Session, el *concurrency.Election) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.TTL())
	defer cancel()
	if err := el.Resign(rctx); err != nil {
		e.log.Warn("resign failed; the key goes with the lease", "err", err)
	}
}

// IsLeader reports whether this replica holds a confirmed term right now.
func (e *Elector) IsLeader() bool {
	_, err := e.Leadership()
	return err == nil
}

// Leadership is the current term, or ErrNotLeader.
func (e *Elector) Leadership() (Leadership, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil {
		return Leadership{}, ErrNotLeader
	}
	return *e.term, nil
}

// Leader is the current leader for GET /api/v1/leader, or ErrNoLeader. While
// Run keeps the observer's watch open it answers from that view; otherwise
// it reads etcd.
func (e *Elector) Leader(ctx context.Context) (Leader, error) {
	leader, synced := e.observer.current()
	if !synced {
		var err error
		if leader, err = e.observer.readNow(ctx); err != nil {
			return Leader{}, err
		}
	}
	if leader == nil {
		return Leader{}, ErrNoLeader
	}
	return *leader, nil
}
