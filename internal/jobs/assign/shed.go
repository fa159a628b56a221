package assign

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Shed records ticks of st that will not start (its worker's shed of late
// ticks) in one chunk record and takes them out of st, in one transaction
// (docs/design-shed.md, "Writer"): if st is as read, the chunk record's key
// is new, and no tick in chunk has a record or a queue entry, it puts the
// chunk record at shed/<instant>/<worker>/<group>/<st's revision> and st
// without those ticks' jobs (deleted when none is left). Every later writer
// of a run of st compares st's revision or reads st, so none runs or
// records a tick the chunk record names; the per-tick compares refuse a
// tick decided before (a take-over of runs its dead worker recorded, a
// pause's record at its lead planned again). It returns st as written,
// which the worker's later claims and cleanup compare, with no jobs when
// it was deleted. ErrConflict: a compare failed and nothing was written.
func (s *Store) Shed(ctx context.Context, st Stored, chunk runs.ChunkRecord) (Stored, error) {
	key := st.Key(s.keys)
	shed := make(map[string]bool, len(chunk.Runs))
	for _, r := range chunk.Runs {
		if !st.Has(r.Job) || shed[r.Job] {
			return Stored{}, fmt.Errorf("assign: shed %s: job %s is not one of its runs, or is twice", key, r.Job)
		}
		shed[r.Job] = true
	}
	if !chunk.At.Equal(st.At) || len(chunk.Runs) == 0 {
		return Stored{}, fmt.Errorf("assign: shed %s: a chunk record of %d ticks at %s", key, len(chunk.Runs), chunk.At)
	}
	if n := 2 + 2*len(chunk.Runs); n > s.maxOps {
		return Stored{}, fmt.Errorf("assign: shed %s: %d compares: %w", key, n, ErrTooLarge)
	}
	chunkKey := s.keys.ShedRecord(st.At, st.Worker, st.Group, int(st.ModRevision))
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(key), "=", st.ModRevision),
		clientv3.Compare(clientv3.CreateRevision(chunkKey), "=", 0),
	}
	for _, r := range chunk.Runs {
		id := st.RunID(r.Job)
		cmps = append(cmps,
			clientv3.Compare(clientv3.CreateRevision(s.keys.Record(r.Job, id)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(s.keys.Entry(r.Job, id)), "=", 0))
	}
	next := st
	next.Jobs = slices.DeleteFunc(slices.Clone(st.Jobs), func(j Job) bool { return shed[j.Name] })
	ops := []clientv3.Op{clientv3.OpPut(chunkKey, runs.EncodeChunkRecord(&chunk)), clientv3.OpDelete(key)}
	if len(next.Jobs) > 0 {
		ops[1] = clientv3.OpPut(key, next.Encode())
	}
	resp, err := s.batch.Commit(ctx, txnbatch.Txn{If: cmps, Then: ops})
	if err != nil {
		return Stored{}, fmt.Errorf("assign: shed %s: %w", key, err)
	}
	if !resp.Succeeded {
		return Stored{}, fmt.Errorf("assign: shed %s: changed since read, or a tick decided: %w", key, ErrConflict)
	}
	next.ModRevision = resp.Header.Revision
	return next, nil
}
