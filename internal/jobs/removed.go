package jobs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RemovedJob is a job gone from the config whose records are kept until
// the leader deletes them, cluster.removed_history_ttl after RemovedAt
// (docs/design-leader.md#a-pause-ends-at-its-until).
type RemovedJob = wire.RemovedJob

// RemovedJobs lists the removed jobs whose history is kept, by name: the
// leader's removal markers, less the jobs this replica's config has (a
// marker goes a moment after its job comes back).
func (rr *runReader) RemovedJobs(ctx context.Context) ([]RemovedJob, error) {
	resp, err := rr.kv.Get(ctx, rr.keys.Removed(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("jobs: read removed jobs: %w", err)
	}
	cfg := rr.config()
	var out []RemovedJob
	for _, kv := range resp.Kvs {
		name := rr.keys.RemovedName(string(kv.Key))
		if cfg.Job(name) != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, string(kv.Value))
		if err != nil {
			rr.log.Warn("removed job: unreadable removal time", "job", name, "err", err)
		}
		out = append(out, RemovedJob{Name: name, RemovedAt: at})
	}
	slices.SortFunc(out, func(a, b RemovedJob) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
