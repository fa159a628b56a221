package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Member is one live replica, as GET /api/v1/members shows it; List
// fills IsLeader from the election.
type Member = wire.Member

// memberValue is what members/<id> holds (docs/design.md#keys).
type memberValue struct {
	ID         string    `json:"id"`
	APIAddr    string    `json:"api_addr"`
	Version    string    `json:"version"`
	ConfigHash string    `json:"config_hash"`
	StartedAt  time.Time `json:"started_at"`
	Protocol   int       `json:"protocol,omitempty"`
}

// Membership keeps this replica's member key, bound to its session lease so
// that the key disappears with the replica.
type Membership struct {
	client   *clientv3.Client
	sessions *session.Manager
	prefix   string
	log      *slog.Logger
	clock    clockwork.Clock

	mu     sync.Mutex
	self   Member
	update chan struct{} // a pending re-put; holds at most one signal
}

// NewMembership checks prefix and self.ID. A zero self.StartedAt is set to
// now. logger may be nil.
func NewMembership(client *clientv3.Client, sessions *session.Manager, prefix string, self Member, logger *slog.Logger) (*Membership, error) {
	if client == nil || sessions == nil {
		return nil, errors.New("election: client and session manager are required")
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	if err := checkID(self.ID); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	clock := clockwork.NewRealClock()
	if self.StartedAt.IsZero() {
		self.StartedAt = clock.Now()
	}
	self.IsLeader = false
	return &Membership{
		client:   client,
		sessions: sessions,
		prefix:   prefix,
		log:      logger.With("component", "membership", "id", self.ID),
		clock:    clock,
		self:     self,
		update:   make(chan struct{}, 1),
	}, nil
}

func (m *Membership) key() string { return membersPrefix(m.prefix) + m.self.ID }

// SetConfigHash records a reloaded config; Run re-puts the member key.
func (m *Membership) SetConfigHash(h string) {
	m.mu.Lock()
	m.self.ConfigHash = h
	m.mu.Unlock()
	select {
	case m.update <- struct{}{}:
	default: // a re-put is already pending and will carry the new hash
	}
}

// Run puts the member key with every new session and after every config
// change until ctx ends, then deletes it.
func (m *Membership) Run(ctx context.Context) error {
	retry := etcdRetry.Start()
	var last *session.Session
	defer func() {
		if last != nil {
			m.leave(ctx, last)
		}
	}()
	for {
		s, err := m.sessions.Current(ctx)
		if err != nil {
			return nil // ctx ended
		}
		// Before the put: a put cut by the stop may still be applied, and
		// the leave must then delete it (it compares the lease, so it
		// deletes nothing that is not this session's).
		last = s
		if err := m.put(ctx, s); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			m.log.Warn("cannot register member; retrying", "err", err)
			retry.WaitOr(ctx, m.clock, s.Done())
			continue
		}
		retry.Reset()
		select {
		case <-ctx.Done():
			return nil
		case <-s.Done():
		case <-m.update:
		}
	}
}

func (m *Membership) put(ctx context.Context, s *session.Session) error {
	m.mu.Lock()
	v := memberValue{ID: m.self.ID, APIAddr: m.self.APIAddr, Version: m.self.Version, ConfigHash: m.self.ConfigHash, StartedAt: m.self.StartedAt, Protocol: m.self.Protocol}
	m.mu.Unlock()
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("election: encode member: %w", err)
	}
	if _, err := s.Client().Put(ctx, m.key(), string(data), clientv3.WithLease(s.Lease())); err != nil {
		return fmt.Errorf("election: put member %s: %w", m.key(), err)
	}
	m.log.Debug("member registered", "lease", int64(s.Lease()), "config_hash", v.ConfigHash)
	return nil
}

// leave deletes the member key at shutdown so it vanishes now rather than
// with the lease; only if it is still bound to our lease, so a newer
// incarnation under the same id keeps its key.
func (m *Membership) leave(ctx context.Context, s *session.Session) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.TTL())
	defer cancel()
	_, err := s.Client().Txn(lctx).
		If(clientv3.Compare(clientv3.LeaseValue(m.key()), "=", s.Lease())).
		Then(clientv3.OpDelete(m.key())).
		Commit()
	if err != nil {
		m.log.Warn("cannot remove member key; it goes with the lease", "err", err)
	}
}

// List returns the live members, sorted by id, with IsLeader set from the
// election as it stands at the same revision.
func (m *Membership) List(ctx context.Context) ([]Member, error) {
	resp, err := m.client.Txn(ctx).Then(
		clientv3.OpGet(membersPrefix(m.prefix), clientv3.WithPrefix()),
		clientv3.OpGet(electionPrefix(m.prefix), clientv3.WithFirstCreate()...),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("election: list members: %w", err)
	}
	leaderID := ""
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		leaderID = parseLeader(kvs[0], m.log).ID
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	members := make([]Member, 0, len(kvs)) // an empty list, not null, in JSON
	for _, kv := range kvs {
		var v memberValue
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			m.log.Warn("skipping unreadable member", "key", string(kv.Key), "err", err)
			continue
		}
		if v.ID == "" {
			v.ID = strings.TrimPrefix(string(kv.Key), membersPrefix(m.prefix))
		}
		members = append(members, Member{
			ID: v.ID, APIAddr: v.APIAddr, Version: v.Version, ConfigHash: v.ConfigHash,
			StartedAt: v.StartedAt, Protocol: v.Protocol, IsLeader: leaderID != "" && v.ID == leaderID,
		})
	}
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return members, nil
}
