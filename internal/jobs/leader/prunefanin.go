package leader

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// pruneFanIns keeps, for each sharded job among jobs, the fan-in keys
// (fanin/<job>/<tick>, and its worst register) of its newest history_limit
// ticks that fanned in, deleting the older ones with pruneJobs' rule: only
// a key still at the revision it was read at. A tick not fanned in yet
// keeps its keys: its shards' final ends still count on them.
func (p *pruner) pruneFanIns(ctx context.Context, jobs []string) error {
	for _, job := range jobs {
		j, _ := p.job(job)
		if j == nil || !j.Sharded() {
			continue
		}
		resp, err := p.d.Client.Get(ctx, p.d.Keys.JobFanIns(job), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			return fmt.Errorf("leader: read fan-ins of %s: %w", job, err)
		}
		worst := map[string]seenKey{} // tick key -> its register
		var done []seenKey
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			if tick, ok := strings.CutSuffix(key, "/worst"); ok {
				worst[tick] = seenKey{key: key, rev: kv.ModRevision}
				continue
			}
			if _, ok := queue.DecodeTick(kv.Value); ok {
				done = append(done, seenKey{key: key, rev: kv.ModRevision})
			}
		}
		limit, _ := p.limits(job)
		var dels []seenKey
		for _, k := range done[:max(0, len(done)-limit)] {
			dels = append(dels, k)
			if w, ok := worst[k.key]; ok {
				dels = append(dels, w)
			}
			if len(dels) >= maxOpsPerTxn-1 {
				if err := p.deleteUnchanged(ctx, dels); err != nil {
					return err
				}
				dels = dels[:0]
			}
		}
		if err := p.deleteUnchanged(ctx, dels); err != nil {
			return err
		}
	}
	return nil
}
