package leader

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// readJobs reads two ranges of each of jobs (reads names them), a batch of
// jobs per transaction so that each read stays within pruneReadBatch
// ranges, and hands each job its two results, read at one revision. what
// names the ranges in an error.
func (b *base) readJobs(ctx context.Context, jobs []string, what string,
	reads func(job string) [2]clientv3.Op, each func(job string, first, second []*mvccpb.KeyValue) error) error {
	for len(jobs) > 0 {
		batch := jobs[:min(len(jobs), pruneReadBatch/2)]
		jobs = jobs[len(batch):]
		ops := make([]clientv3.Op, 0, 2*len(batch))
		for _, job := range batch {
			r := reads(job)
			ops = append(ops, r[0], r[1])
		}
		resp, err := b.d.Client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("leader: read %s: %w", what, err)
		}
		for i, job := range batch {
			first := resp.Responses[2*i].GetResponseRange().Kvs
			second := resp.Responses[2*i+1].GetResponseRange().Kvs
			if err := each(job, first, second); err != nil {
				return err
			}
		}
	}
	return nil
}
