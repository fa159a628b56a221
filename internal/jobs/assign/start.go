package assign

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// StartChunk writes the start mark of a chunk claimed ahead: its marker,
// as ClaimChunk wrote it at revision rev, rewritten without the ahead
// mark, if the marker is unchanged and the worker alive (its member key on
// its lease). Only then may the chunk's runs start: a worker resolved as dead
// had its markers read when it was dead already, and a dead incarnation
// never lives again, so the leader and the worker never both decide a
// run (docs/protocol.md, "Start marks"). It returns the marker's new
// ModRevision, which Cleanup compares. ErrGone: the marker changed or the
// worker is dead; no run of the chunk may start. jobs are the runs the
// chunk tried, as ClaimChunk was given them.
func (c *Claimer) StartChunk(ctx context.Context, a Assignment, chunk int, rev int64, jobs []string) (int64, error) {
	if err := a.Validate(); err != nil {
		return 0, err
	}
	marker := c.keys.ClaimMarker(a.Worker, a.At, a.Group, chunk)
	if rev <= 0 || len(jobs) == 0 {
		return 0, fmt.Errorf("assign: start %s: needs the marker's revision and its runs", marker)
	}
	started := encodeMarker(jobs, false)
	resp, err := c.kv.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(marker), "=", rev),
		c.living(a.Worker),
	).Then(clientv3.OpPut(marker, started)).Else(
		clientv3.OpGet(marker),
		clientv3.OpGet(c.memberKey(a.Worker), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return 0, fmt.Errorf("assign: start %s: %w", marker, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	// A mark sent again after its answer was lost finds itself written:
	// only this worker rewrites its markers (the leader deletes them).
	mkv := resp.Responses[0].GetResponseRange().Kvs
	if len(mkv) > 0 && string(mkv[0].Value) == started && c.alive(a.Worker, resp.Responses[1].GetResponseRange().Kvs) {
		return mkv[0].ModRevision, nil
	}
	return 0, fmt.Errorf("assign: start %s: the marker changed or its worker is taken for dead: %w", marker, ErrGone)
}
