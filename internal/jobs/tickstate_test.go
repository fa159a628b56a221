package jobs_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// awaitTick waits up to within for the tick's fan-in record and returns it.
// Past within it fails with what etcd holds of the tick, so that a failure
// in CI says where the tick stopped.
func awaitTick(t *testing.T, cli *clientv3.Client, job, tick string, within time.Duration) queue.TickRecord {
	t.Helper()
	var rec queue.TickRecord
	if !poll.Within(within, func() bool {
		var done bool
		rec, done = tickOf(t, cli, job, tick)
		return done
	}) {
		t.Fatalf("the fan-in of tick %s: not within %s; etcd holds:\n%s", tick, within, tickState(cli, job, tick))
	}
	return rec
}

// tickState reads, at one revision, the tick's shard records, queue
// entries and slots, the assignments and their claim markers, the job's
// unstarted marks, the members and the election, and says what it found.
func tickState(cli *clientv3.Client, job, tick string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k := keys.New(testPrefix)
	resp, err := cli.Txn(ctx).Then(
		clientv3.OpGet(k.Record(job, tick+"#"), clientv3.WithPrefix()),
		clientv3.OpGet(k.Entry(job, tick), clientv3.WithPrefix()),
		clientv3.OpGet(k.JobSlots(job), clientv3.WithPrefix()),
		clientv3.OpGet(k.Assignments(), clientv3.WithPrefix()),
		clientv3.OpGet(k.Claimed(), clientv3.WithPrefix()),
		clientv3.OpGet(k.Unstarted(job), clientv3.WithPrefix()),
		clientv3.OpGet(k.Members(), clientv3.WithPrefix()),
		clientv3.OpGet(k.Election(), clientv3.WithPrefix())).Commit()
	if err != nil {
		return "(cannot read etcd: " + err.Error() + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "at revision %d\n", resp.Header.Revision)
	fmt.Fprintf(&b, "shard records: %s\n", recordSummary(resp.Responses[0].GetResponseRange().Kvs))
	names := []string{"queue entries", "slots", "assignments", "claim markers", "unstarted marks", "members", "election"}
	for i, name := range names {
		fmt.Fprintf(&b, "%s: %s\n", name, keySummary(resp.Responses[i+1].GetResponseRange().Kvs))
	}
	return b.String()
}

// keySummary counts keys by lease and lists up to ten of them.
func keySummary(kvs []*mvccpb.KeyValue) string {
	leases := map[int64]int{}
	var some []string
	for _, kv := range kvs {
		leases[kv.Lease]++
		if len(some) < 10 {
			some = append(some, string(kv.Key))
		}
	}
	return fmt.Sprintf("%d, by lease %v, first %q", len(kvs), leases, some)
}

// recordSummary counts records by outcome and attempt.
func recordSummary(kvs []*mvccpb.KeyValue) string {
	count := map[string]int{}
	for _, kv := range kvs {
		r, err := runs.DecodeRecord(kv.Value)
		if err != nil {
			count["undecodable"]++
			continue
		}
		count[fmt.Sprintf("%s (attempt %d)", r.Outcome, r.Attempt)]++
	}
	var out []string
	for what, n := range count {
		out = append(out, fmt.Sprintf("%d %s", n, what))
	}
	sort.Strings(out)
	return fmt.Sprintf("%d: %s", len(kvs), strings.Join(out, ", "))
}
