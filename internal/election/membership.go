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

	"github.com/etcdsched/scheduler/internal/backoff"
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
// change until ctx ends. It never deletes the key: the session's revoke at
// shutdown, or its expiry, does, with the slots on the same lease.
//
// The key moves to a new session's lease only once the lease it names is
// gone (put): the leader resolves an incarnation whose member key is off
// its lease, writing lost records for its started runs, and a run's
// release then needs that incarnation's slots gone too, so that it cannot
// write its record over the leader's (docs/protocol.md#keys, "Members").
func (m *Membership) Run(ctx context.Context) error {
	retry := etcdRetry.Start()
	for {
		s, err := m.sessions.Current(ctx)
		if err != nil {
			return nil // ctx ended
		}
		err = m.put(ctx, s)
		var held *heldError
		switch {
		case err == nil:
			retry.Reset()
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &held):
			m.log.Info("member key still on the lease of this replica's earlier session; registering once it expires", "lease", held.lease, "in", held.left)
			backoff.SleepOr(ctx, m.clock, held.left, s.Done())
			continue
		default:
			m.log.Warn("cannot register member; retrying", "err", err)
			retry.WaitOr(ctx, m.clock, s.Done())
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.Done():
		case <-m.update:
		}
	}
}

// heldError: the member key is on another lease that still lives, left
// more at most (an earlier session of this replica whose keepalives were
// lost, or a process before this one under the same id).
type heldError struct {
	lease int64
	left  time.Duration
}

func (e *heldError) Error() string {
	return fmt.Sprintf("election: member key on lease %x, which lives %s more", e.lease, e.left)
}

// put puts the member key on s's lease where it is absent or on that lease
// already; on any other lease it answers a heldError with the time that
// lease has left (a key on no lease, put by hand, is replaced).
func (m *Membership) put(ctx context.Context, s *session.Session) error {
	m.mu.Lock()
	v := memberValue{ID: m.self.ID, APIAddr: m.self.APIAddr, Version: m.self.Version, ConfigHash: m.self.ConfigHash, StartedAt: m.self.StartedAt, Protocol: m.self.Protocol}
	m.mu.Unlock()
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("election: encode member: %w", err)
	}
	key, lease := m.key(), s.Lease()
	put := clientv3.OpPut(key, string(data), clientv3.WithLease(lease))
	resp, err := s.Client().Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).Then(put).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fmt.Errorf("election: put member %s: %w", key, err)
	}
	if !resp.Succeeded {
		cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			if kvs[0].Lease != 0 {
				return m.held(ctx, s, kvs[0].Lease)
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)
		}
		resp, err = s.Client().Txn(ctx).If(cmp).Then(put).Commit()
		if err != nil {
			return fmt.Errorf("election: put member %s: %w", key, err)
		}
		if !resp.Succeeded {
			return fmt.Errorf("election: put member %s: changed while read", key)
		}
	}
	m.log.Debug("member registered", "lease", int64(lease), "config_hash", v.ConfigHash)
	return nil
}

// held is the heldError of a member key on lease, with the time the lease
// has left as etcd counts it (a lease just gone: none).
func (m *Membership) held(ctx context.Context, s *session.Session, lease int64) error {
	ttl, err := s.Client().TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		return fmt.Errorf("election: member key on lease %x: read its time to live: %w", lease, err)
	}
	left := time.Duration(max(ttl.TTL, 0)) * time.Second
	// etcd counts whole seconds; a little more so the next look finds it gone.
	return &heldError{lease: lease, left: left + 100*time.Millisecond}
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
