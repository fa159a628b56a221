package leader

import (
	"context"
	"fmt"
	"slices"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
)

// assignSnap is the assignments as one read of assign/ found them, shared
// by the withdrawals of one pass: a config change that sweeps thousands of
// jobs reads assign/ once, not once a job (the burst benchmark's step from
// 2,000 jobs to 4,000 removed 2,000 and read the whole prefix for each,
// and the leader stalled). It is kept current by the withdrawals' own
// rewrites and dropped when a resolution moves runs; a key a worker
// deleted since stays in it, and its rewrite then fails its compare, so
// the tick counts as kept: the cursor stays at it, which is safe.
type assignSnap struct {
	mu     sync.Mutex
	loaded bool
	byKey  map[string]*snapped
}

type snapped struct {
	a      assign.Assignment
	modRev int64
	// stuck: a rewrite of it as read failed its compares (a chunk claimed
	// from it, or its worker rewrote or deleted it), so every take-out
	// from it would: the ticks it names stay (takeOutGone).
	stuck bool
}

// naming is the assignments naming job, loading them first when needed.
func (s *assignSnap) naming(ctx context.Context, b *base, job string) ([]snapped, error) {
	return s.namingAny(ctx, b, func(name string) bool { return name == job })
}

// namingAny is the assignments naming a job that in says is one, loading
// them first when needed.
func (s *assignSnap) namingAny(ctx context.Context, b *base, in func(job string) bool) ([]snapped, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		resp, err := b.d.Client.Get(ctx, b.d.Keys.Assignments(), clientv3.WithPrefix())
		if err != nil {
			return nil, fmt.Errorf("leader: read the assignments to withdraw from: %w", err)
		}
		s.byKey = make(map[string]*snapped, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			if a, err := assign.Decode(b.d.Keys, string(kv.Key), kv.Value); err == nil {
				s.byKey[string(kv.Key)] = &snapped{a: a, modRev: kv.ModRevision}
			}
		}
		s.loaded = true
	}
	var out []snapped
	for _, sn := range s.byKey {
		if slices.ContainsFunc(sn.a.Jobs, func(j assign.Job) bool { return in(j.Name) }) {
			out = append(out, *sn)
		}
	}
	return out, nil
}

// tookOut records a successful take-out of the jobs out says are taken
// from key at revision rev.
func (s *assignSnap) tookOut(key string, out func(job string) bool, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.byKey[key]
	if sn == nil {
		return
	}
	sn.a.Jobs = slices.DeleteFunc(slices.Clone(sn.a.Jobs), func(j assign.Job) bool { return out(j.Name) })
	sn.modRev = rev
	if len(sn.a.Jobs) == 0 {
		delete(s.byKey, key)
	}
}

// stick records that a rewrite of key as read failed its compares.
func (s *assignSnap) stick(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.byKey[key]; sn != nil {
		sn.stuck = true
	}
}

// drop forgets what was read: the next withdrawal reads again.
func (s *assignSnap) drop() {
	s.mu.Lock()
	s.loaded, s.byKey = false, nil
	s.mu.Unlock()
}
