package leader

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// readJobs reads two ranges of each of jobs (reads names them), a batch of
// jobs per transaction so that each read stays within pruneReadBatch
// ranges, and hands each job its two results, read at one revision, in the
// order of jobs and from this goroutine. A wave of inFlight transactions is
// sent at once (eachBatchInFlight). what names the ranges in an error.
func (b *base) readJobs(ctx context.Context, jobs []string, what string,
	reads func(job string) [2]clientv3.Op, each func(job string, first, second []*mvccpb.KeyValue) error) error {
	per := pruneReadBatch / 2
	for len(jobs) > 0 {
		wave := jobs[:min(len(jobs), per*inFlight)]
		jobs = jobs[len(wave):]
		resps := make([]*clientv3.TxnResponse, (len(wave)+per-1)/per)
		err := eachBatchInFlight(ctx, len(wave), per, func(ctx context.Context, i, lo, hi int) error {
			batch := wave[lo:hi]
			ops := make([]clientv3.Op, 0, 2*len(batch))
			for _, job := range batch {
				r := reads(job)
				ops = append(ops, r[0], r[1])
			}
			resp, err := b.d.Client.Txn(ctx).Then(ops...).Commit()
			if err != nil {
				return fmt.Errorf("leader: read %s: %w", what, err)
			}
			resps[i] = resp
			return nil
		})
		if err != nil {
			return err
		}
		for i, job := range wave {
			rs := resps[i/per].Responses
			if err := each(job, rs[2*(i%per)].GetResponseRange().Kvs, rs[2*(i%per)+1].GetResponseRange().Kvs); err != nil {
				return err
			}
		}
	}
	return nil
}
