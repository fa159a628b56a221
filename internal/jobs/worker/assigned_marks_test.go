package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/netproxy"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// The chunks a worker claimed ahead for one instant write their start
// marks in one transaction (assigned_marks.go): both markers of two
// assignments due together are rewritten as started at one revision.
// Each in its own transaction, they were rewritten at two.
func TestTheStartMarksOfAnInstantAreOneTransaction(t *testing.T) {
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/lean-marks/", job("m1"), exec, testWorkerOptions{jobs: []config.Job{job("m2")}})
	at := time.Now().Add(1500 * time.Millisecond).UTC() // claimed up to 500 ms ahead (assigned_lead.go)
	me := tw.incarnation(t)
	tw.assignJobs(t, me, at, "m1")
	tw.assignJobs(t, me, at, "m2")
	poll.For(t, 30*time.Second, "both chunks claimed ahead", func() bool {
		kvs := tw.markers(t)
		return len(kvs) == 2 && strings.Contains(string(kvs[0].Value), "/ahead") && strings.Contains(string(kvs[1].Value), "/ahead")
	})
	started(t, exec)
	started(t, exec)
	kvs := tw.markers(t)
	if len(kvs) != 2 {
		t.Fatalf("%d claim markers while both runs run, want 2", len(kvs))
	}
	for _, kv := range kvs {
		if strings.Contains(string(kv.Value), "/ahead") {
			t.Errorf("marker %s still ahead (%s) after its run started", kv.Key, kv.Value)
		}
	}
	if kvs[0].ModRevision != kvs[1].ModRevision {
		t.Errorf("start marks written at revisions %d and %d, want one transaction", kvs[0].ModRevision, kvs[1].ModRevision)
	}
	// scheduler_start_mark_seconds: one transaction's wait, after the instant.
	var waited dto.Metric
	if err := tw.w.d.Metrics.StartMarks.(prometheus.Metric).Write(&waited); err != nil {
		t.Fatal(err)
	}
	if n, sum := waited.GetHistogram().GetSampleCount(), waited.GetHistogram().GetSampleSum(); n != 1 || sum < 0 {
		t.Errorf("scheduler_start_mark_seconds counted %d transactions (sum %.3fs), want 1 after its instant", n, sum)
	}
	close(exec.release)
	for _, name := range []string{"m1", "m2"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)); rec.Outcome != runs.Succeeded {
			t.Errorf("%s: %s, want succeeded", name, rec.Outcome)
		}
	}
	tw.waitSettled(t)
}

// markers are the claim markers under the worker's prefix.
func (tw *testWorker) markers(t *testing.T) []*mvccpb.KeyValue {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), tw.layout.Claimed(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Kvs
}

// Start marks that etcd is slow to commit make their instant's runs late,
// and with them maybe the next ticks of their jobs (skipped for the
// overlap): the worker says so, naming the instant and the wait, once a
// mark transaction answers over slowMarks after its instant.
func TestStartMarksSlowToCommitAreLogged(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 4)}
	seen := &logSeen{}
	var proxy *netproxy.Proxy
	tw := startTestWorker(t, "/lean-slow-marks/", job("slow"), exec, testWorkerOptions{log: slog.New(seen), writes: proxiedWrites(t, &proxy)})
	at := time.Now().Add(1500 * time.Millisecond).UTC() // claimed up to 500 ms ahead (assigned_lead.go)
	tw.assignJobs(t, tw.incarnation(t), at, "slow")
	poll.For(t, 30*time.Second, "the chunk claimed ahead", func() bool {
		kvs := tw.markers(t)
		return len(kvs) == 1 && strings.Contains(string(kvs[0].Value), "/ahead")
	})
	proxy.SetDelay(slowMarks+200*time.Millisecond, 0) // the mark reaches etcd over slowMarks late
	select {
	case <-exec.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not start")
	}
	proxy.SetDelay(0, 0)
	if !seen.saw("runs claimed ahead started late: etcd was slow to commit their start marks") {
		t.Error("no warning of start marks that answered over a second after their instant")
	}
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("slow", at)); rec.Outcome != runs.Succeeded {
		t.Errorf("the run: %s, want succeeded (late, not lost)", rec.Outcome)
	}
	tw.waitSettled(t)
}

// Past capacity an instant's marks go in many transactions; a slow etcd
// is one warning an instant, not one a transaction.
func TestSlowMarksAreOneWarningAnInstant(t *testing.T) {
	seen := &logSeen{}
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	marks := newStartMarks(nil, clockwork.NewRealClock(), slog.New(seen), m.StartMarks)
	at := time.Date(2026, 12, 1, 20, 26, 14, 0, time.UTC)
	late := at.Add(slowMarks + time.Second)
	for range 3 {
		marks.observe(at, at, late, 1)
	}
	marks.observe(at.Add(time.Second), late, late.Add(time.Second), 1)
	marks.observe(at, late, late.Add(2*time.Second), 1) // an older instant answering last
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.msgs) != 2 {
		t.Errorf("%d warnings for two slow instants in five transactions, want 2: %q", len(seen.msgs), seen.msgs)
	}
}
