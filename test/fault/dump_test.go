package fault

import (
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// dumpStalled logs, for each job the checker found not running after the
// last heal, what etcd holds of it: its queue entries and slot keys with
// their leases and revisions. A stall is a liveness defect whose cause is
// in that state, gone once the cluster stops.
func (r *runner) dumpStalled(violations []string) {
	cli, err := r.c.Client()
	if err != nil {
		r.t.Logf("dump: %v", err)
		return
	}
	defer cli.Close()
	ctx, cancel := r.ctx(10 * time.Second)
	defer cancel()
	layout := keys.New(prefix)
	for _, v := range violations {
		rest, ok := strings.CutPrefix(v, "healed: job ")
		if !ok {
			continue
		}
		job, _, _ := strings.Cut(rest, " ")
		for _, p := range []string{layout.Queue() + job + "/", layout.JobSlots(job)} {
			resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
			if err != nil {
				r.t.Logf("dump %s: %v", p, err)
				continue
			}
			r.t.Logf("dump %s at revision %d: %d keys", p, resp.Header.Revision, len(resp.Kvs))
			for _, kv := range resp.Kvs {
				ttl := int64(-1)
				if kv.Lease != 0 {
					if l, err := cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease)); err == nil {
						ttl = l.TTL
					}
				}
				r.t.Logf("  %s create=%d mod=%d lease=%x ttl=%d %.300s", kv.Key, kv.CreateRevision, kv.ModRevision, kv.Lease, ttl, kv.Value)
			}
		}
	}
}
