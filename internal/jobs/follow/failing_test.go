package follow

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

// failing is the mirror of recovered: the first run that ends otherwise
// after a success, once per change in a run of failures (none for a job
// that never succeeded yet), and recovered stays as it was: after any
// failure, the first failure of all included. Each success
// puts the job's last success.
func TestFailingOncePerChange(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/failing/")
	cfg := chainConfig()
	cfg.Notify.Sinks[0].On = []string{config.Failing, config.Recovered}
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	job := cfg.Job("extract")
	outcomes := []runs.Outcome{runs.Failed, runs.Succeeded, runs.Failed, runs.TimedOut, runs.Succeeded, runs.Succeeded, runs.Lost, runs.Failed}
	ids := make([]string, len(outcomes))
	for i, o := range outcomes {
		at := now.Add(time.Duration(i) * time.Second)
		e := queue.NewEntry(runs.ID("extract", at), job, nil, at, at, 1, runs.Schedule)
		end(t, cli, k, cfg, e, o, at)
		ids[i] = e.RunID
	}
	resp, err := cli.Get(context.Background(), k.Outbox(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, kv := range resp.Kvs {
		n, err := notify.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		got[n.Event] = append(got[n.Event], n.Record.RunID)
	}
	slices.Sort(got[config.Failing])
	slices.Sort(got[config.Recovered])
	if want := []string{ids[2], ids[6]}; !slices.Equal(got[config.Failing], want) {
		t.Errorf("failing for runs %v, want %v (the first failure after each success)", got[config.Failing], want)
	}
	if want := []string{ids[1], ids[4]}; !slices.Equal(got[config.Recovered], want) {
		t.Errorf("recovered for runs %v, want %v", got[config.Recovered], want)
	}
	if len(resp.Kvs) != 4 {
		t.Errorf("%d notifications, want 4", len(resp.Kvs))
	}
	last, err := cli.Get(context.Background(), k.LastSuccess("extract"))
	if err != nil || len(last.Kvs) != 1 {
		t.Fatalf("last success: %v, %v", last, err)
	}
	if s, ok := overdue.Decode[overdue.Succeeded](last.Kvs[0].Value); !ok || s.RunID != ids[5] || !s.EndedAt.Equal(now.Add(5*time.Second)) {
		t.Errorf("last success %+v, want run %s", s, ids[5])
	}
}
