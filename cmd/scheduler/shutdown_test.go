package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// sleepJob is a job that only runs when triggered and takes secs seconds.
func sleepJob(grace string, secs int) string {
	return fmt.Sprintf(`worker:
  shutdown_grace: %s
jobs:
  - name: long
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["sleep", "%d"]
      kill_grace: 1s
`, grace, secs)
}

// record reads a finished run's record straight from etcd: the replica that
// wrote it is gone.
func record(t *testing.T, cli *clientv3.Client, prefix, runID string) client.Run {
	t.Helper()
	resp, err := cli.Get(context.Background(), keys.New(prefix).Record(runs.JobOf(runID), runID))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("no record of %s", runID)
	}
	var rec client.Run
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// left counts the keys a prefix still holds.
func left(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// startWithLongRun starts replica a alone on its own etcd under prefix
// with jobs, and returns it once its run of "long" runs, with a client of
// that etcd.
func startWithLongRun(t *testing.T, prefix, jobs string) (*proc, *clientv3.Client, string) {
	t.Helper()
	etcd := etcdtest.Start(t)
	a := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], prefix, jobs))
	runID := a.trigger("long")
	a.waitRunning(runID)
	return a, etcd.Client(), runID
}

// SIGTERM during a run that ends within worker.shutdown_grace: the run
// finishes and is recorded succeeded, then the process releases its slot,
// revokes its session and exits 0. While it drains, /readyz answers 503,
// so a Service stops routing API calls to it.
func TestShutdownLetsRunFinishWithinGrace(t *testing.T) {
	const prefix = "/grace-long/"
	a, cli, runID := startWithLongRun(t, prefix, sleepJob("20s", 4))

	signalled := time.Now()
	a.terminate()
	poll.Until(t, 30*time.Second, "/readyz 503 while draining", func() (bool, string) {
		select {
		case <-a.exited:
			t.Fatal("exited before /readyz answered 503 during the drain")
		default:
		}
		err := a.api.Ready(context.Background())
		e, ok := client.AsError(err)
		return ok && e.Status == http.StatusServiceUnavailable && strings.Contains(e.Message, "draining"), fmt.Sprint(err)
	})
	if code := a.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	rec := record(t, cli, prefix, runID)
	if rec.Outcome != "succeeded" || rec.Holder != "a" {
		t.Fatalf("record: %+v, want succeeded on a", rec)
	}
	if !rec.EndedAt.After(signalled) || a.exitAt.Before(rec.EndedAt) {
		t.Errorf("run ended %s, SIGTERM at %s, exit at %s: want SIGTERM < end < exit", rec.EndedAt, signalled, a.exitAt)
	}
	layout := keys.New(prefix)
	for _, p := range []string{layout.Slots(), layout.Members(), layout.Election(), layout.Queue()} {
		if n := left(t, cli, p); n != 0 {
			t.Errorf("%d keys left under %s after exit", n, p)
		}
	}
}

// SIGTERM during a run longer than the grace: the run is cancelled when the
// grace ends, recorded interrupted with its next attempt queued at once for
// another replica (docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts), and the process exits long before the
// run would have ended.
func TestShutdownCancelsRunAfterGrace(t *testing.T) {
	const prefix = "/grace-short/"
	a, cli, runID := startWithLongRun(t, prefix, sleepJob("1s", 60))

	signalled := time.Now()
	a.terminate()
	if code := a.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	rec := record(t, cli, prefix, runID)
	if rec.Outcome != "interrupted" || !strings.Contains(rec.Error, "shutdown_grace") {
		t.Fatalf("record: %+v, want interrupted for the shutdown grace", rec)
	}
	if n := left(t, cli, keys.New(prefix).Queue()); n != 1 {
		t.Errorf("%d queue entries after exit, want 1: the run's next attempt", n)
	}
	if d := rec.EndedAt.Sub(signalled); d < time.Second {
		t.Errorf("run cancelled %s after SIGTERM, before the 1s grace", d)
	}
	if n := left(t, cli, keys.New(prefix).Slots()); n != 0 {
		t.Errorf("%d slots held after exit", n)
	}
}

// Two replicas on one etcd. The leader gets SIGTERM while it runs a job
// with a long grace: it resigns at once, so an independent watch on the
// election prefix sees its key go, and the other replica reports itself
// leader, while the terminated process is still draining its run.
func TestShutdownHandsOverLeadershipBeforeExit(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client()
	const prefix = "/handover/"
	cfg := writeConfig(t, etcd.Endpoints()[0], prefix, sleepJob("20s", 4))

	// a starts alone, so it leads and runs the job.
	a := startProc(t, "a", cfg)
	a.waitLeader("a")
	runID := a.trigger("long")
	if st := a.waitRunning(runID); st.Holder != "a" {
		t.Fatalf("run held by %q, want a", st.Holder)
	}
	b := startProc(t, "b", cfg)

	// The election keys, once b campaigns: a's (the oldest) and b's.
	var resp *clientv3.GetResponse
	poll.Until(t, 30*time.Second, "b campaigns", func() (bool, string) {
		var err error
		resp, err = cli.Get(context.Background(), keys.New(prefix).Election(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Kvs) == 2, fmt.Sprintf("%d election keys", len(resp.Kvs))
	})
	aKey, bKey := string(resp.Kvs[0].Key), string(resp.Kvs[1].Key)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// An independent witness: the moment a's election key is deleted while
	// b's stays is the moment b leads.
	resigned := make(chan time.Time, 1)
	wch := cli.Watch(ctx, keys.New(prefix).Election(), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wr := range wch {
			for _, ev := range wr.Events {
				switch {
				case ev.Type == clientv3.EventTypeDelete && string(ev.Kv.Key) == aKey:
					resigned <- time.Now()
					return
				case string(ev.Kv.Key) == bKey:
					t.Errorf("b's election key changed before a resigned: %v", ev)
				}
			}
		}
	}()
	// What b's API says, polled as fast as it answers.
	bLeads := make(chan time.Time, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Within's deadline only bounds the goroutine; the test's own
		// deadlines below say what is late.
		if poll.Within(time.Minute, func() bool { return ctx.Err() != nil || b.leaderID() == "b" }) && ctx.Err() == nil {
			bLeads <- time.Now()
		}
	}()

	a.terminate()
	if code := a.waitExit(30 * time.Second); code != 0 {
		t.Fatalf("a: exit %d after SIGTERM", code)
	}
	var resignedAt, bLeadAt time.Time
	select {
	case resignedAt = <-resigned:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch never saw a's election key deleted")
	}
	select {
	case bLeadAt = <-bLeads:
	case <-time.After(5 * time.Second):
		t.Fatal("b never reported itself leader")
	}
	if !resignedAt.Before(a.exitAt) || !bLeadAt.Before(a.exitAt) {
		t.Errorf("a exited at %s; its key went at %s and b led at %s: want both before the exit", a.exitAt, resignedAt, bLeadAt)
	}
	t.Logf("a's key deleted %s and b leads %s before a exited", a.exitAt.Sub(resignedAt), a.exitAt.Sub(bLeadAt))
	if rec := record(t, cli, prefix, runID); rec.Outcome != "succeeded" || rec.Holder != "a" {
		t.Errorf("record: %+v, want succeeded on a", rec)
	}
	b.terminate()
	if code := b.waitExit(30 * time.Second); code != 0 {
		t.Errorf("b: exit %d after SIGTERM", code)
	}
}

// `scheduler run` on an API address in use says so in one line and exits 1,
// without starting the embedded etcd first.
func TestRunRefusesAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dataDir := t.TempDir()
	_, stderr, code := runBinary(t, "run", "--config", "../../config/example.yaml",
		"--listen", ln.Addr().String(), "--data-dir", dataDir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var rec struct{ Msg, Err string }
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil ||
		rec.Msg != "scheduler refused to start" ||
		!strings.Contains(rec.Err, "api: listen "+ln.Addr().String()) || !strings.Contains(rec.Err, "address already in use") {
		t.Errorf("stderr = %q, want one line saying it refused to start on the address in use", stderr)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("embedded etcd data dir exists (%v): etcd started before the address was checked", err)
	}
}
