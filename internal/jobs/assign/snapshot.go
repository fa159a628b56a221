package assign

import (
	"context"
	"fmt"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Stored is an assignment as read, with the claim markers of its chunks.
type Stored struct {
	Assignment
	CreateRevision int64
	ModRevision    int64 // what ClaimChunk compares
	Markers        []Marker
}

// Marker is one chunk's claim marker as read.
type Marker struct {
	Chunk       int
	Jobs        []string // the runs the chunk tried
	ModRevision int64
	// Ahead: the chunk was claimed before its instant and its start mark
	// is not written: none of its runs started (StartChunk).
	Ahead bool
}

// Tried reports whether a marker names job.
func (st *Stored) Tried(job string) bool {
	return st.marked(job, func(Marker) bool { return true })
}

// Started reports whether a marker that is not ahead names job: its run
// may have started.
func (st *Stored) Started(job string) bool {
	return st.marked(job, func(m Marker) bool { return !m.Ahead })
}

func (st *Stored) marked(job string, which func(Marker) bool) bool {
	for _, m := range st.Markers {
		if !which(m) {
			continue
		}
		for _, j := range m.Jobs {
			if j == job {
				return true
			}
		}
	}
	return false
}

// groupAt identifies an assignment of one worker.
type groupAt struct {
	at    time.Time
	group string
}

// Snapshot is one worker's assignments and markers at one revision, and
// whether its member key existed then.
type Snapshot struct {
	Worker      string
	Revision    int64
	Member      bool
	Assignments []Stored // in instant order
}

// Read reads worker's assignments, claim markers and member key in one
// transaction, so at one revision.
func (s *Store) Read(ctx context.Context, worker string) (Snapshot, error) {
	return s.read(ctx, worker)
}

// read is Read, for the Store and the Resolver.
func (p *protocol) read(ctx context.Context, worker string) (Snapshot, error) {
	resp, err := p.kv.Txn(ctx).Then(
		clientv3.OpGet(p.keys.WorkerAssignments(worker), clientv3.WithPrefix()),
		clientv3.OpGet(p.keys.WorkerClaimed(worker), clientv3.WithPrefix()),
		clientv3.OpGet(p.memberKey(worker), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return Snapshot{}, fmt.Errorf("assign: read worker %s: %w", worker, err)
	}
	snap := Snapshot{Worker: worker, Revision: resp.Header.Revision, Member: p.alive(worker, resp.Responses[2].GetResponseRange().Kvs)}
	at := map[groupAt]int{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		a, err := Decode(p.keys, string(kv.Key), kv.Value)
		if err != nil {
			return Snapshot{}, err
		}
		at[groupAt{a.At, a.Group}] = len(snap.Assignments)
		snap.Assignments = append(snap.Assignments, Stored{Assignment: a, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		_, instant, group, chunk, ok := p.keys.ParseClaimMarker(string(kv.Key))
		if !ok {
			return Snapshot{}, fmt.Errorf("assign: read worker %s: %q is not a claim marker key", worker, kv.Key)
		}
		jobs, ahead, err := decodeMarker(string(kv.Key), kv.Value)
		if err != nil {
			return Snapshot{}, err
		}
		i, found := at[groupAt{instant, group}]
		if !found {
			// A marker whose assignment is gone: left by an interrupted
			// cleanup; it names no run to resolve.
			snap.Assignments = append(snap.Assignments, Stored{Assignment: Assignment{Worker: worker, At: instant, Group: group}})
			i = len(snap.Assignments) - 1
			at[groupAt{instant, group}] = i
		}
		snap.Assignments[i].Markers = append(snap.Assignments[i].Markers, Marker{Chunk: chunk, Jobs: jobs, ModRevision: kv.ModRevision, Ahead: ahead})
	}
	sort.Slice(snap.Assignments, func(i, j int) bool {
		a, b := &snap.Assignments[i], &snap.Assignments[j]
		return a.At.Before(b.At) || a.At.Equal(b.At) && a.Group < b.Group
	})
	return snap, nil
}

// cleanupOps delete an assignment and its markers; cleanupCmps compare
// each with its ModRevision as read, so a reassignment or a marker written
// since is not undone.
func (p *protocol) cleanupOps(st *Stored) ([]clientv3.Cmp, []clientv3.Op) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	if st.ModRevision != 0 {
		key := st.Key(p.keys)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", st.ModRevision))
		ops = append(ops, clientv3.OpDelete(key))
	}
	for _, m := range st.Markers {
		key := p.keys.ClaimMarker(st.Worker, st.At, st.Group, m.Chunk)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", m.ModRevision))
		ops = append(ops, clientv3.OpDelete(key))
	}
	return cmps, ops
}

// Cleanup deletes an assignment and its markers as read, once every run
// it names has a record (the worker's business), in a group commit
// (Options.Batch). ErrConflict: one of them changed since it was read, and
// nothing was deleted.
func (s *Store) Cleanup(ctx context.Context, st Stored) error {
	cmps, ops := s.cleanupOps(&st)
	if len(ops) == 0 {
		return nil
	}
	if len(ops) > s.maxOps {
		return fmt.Errorf("assign: clean up %s: %d keys: %w", st.Key(s.keys), len(ops), ErrTooLarge)
	}
	resp, err := s.batch.Commit(ctx, txnbatch.Txn{If: cmps, Then: ops})
	if err != nil {
		return fmt.Errorf("assign: clean up %s: %w", st.Key(s.keys), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("assign: clean up %s: changed since read: %w", st.Key(s.keys), ErrConflict)
	}
	return nil
}
