package replica

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

// echoJob is the jobs section of a replica with one job, "echo", that
// runs only when triggered (its one tick a year is not caught up).
const echoJob = `jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["echo", "hello"]
`

// writeFile replaces path atomically, the way an editor saves.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// testReplica is one replica.Run in this process.
type testReplica struct {
	t      *testing.T
	id     string
	url    string
	logs   *logtest.Sink
	hup    chan os.Signal
	api    *client.Client // without a token
	tokens map[string]*client.Client
	stop   context.CancelFunc
	done   chan error
	closed bool
}

type replicaOpt func(*Options)

func noWatch(o *Options) { o.NoWatch = true }

// startReplica runs a replica on the config file at path and waits until it
// is ready; it is stopped at cleanup.
func startReplica(t *testing.T, id, path string, opts ...replicaOpt) *testReplica {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &testReplica{t: t, id: id, logs: &logtest.Sink{}, hup: make(chan os.Signal, 1), done: make(chan error, 1)}
	o := Options{Config: cfg, ConfigPath: path, ID: id, Version: "test",
		Logger: slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Reload: r.hup,
		Supervised: true} // TestMain is etcdtest.Main, which calls target.Supervise
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- Run(ctx, o) }()
	t.Cleanup(r.shutdown)

	poll.Until(t, 30*time.Second, "api listening", func() (bool, string) {
		select {
		case err := <-r.done:
			r.closed = true
			t.Fatalf("replica %s exited while starting: %v", id, err)
		default:
		}
		rec := r.logs.Find("api listening")
		if rec == nil {
			return false, "no 'api listening' line yet"
		}
		r.url = "http://" + rec["addr"].(string)
		r.api = r.client("")
		return true, ""
	})
	poll.Until(t, 30*time.Second, id+" ready", func() (bool, string) {
		err := r.api.Ready(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	poll.Until(t, 30*time.Second, id+" sees a leader", func() (bool, string) {
		_, err := r.api.Leader(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	return r
}

// shutdown cancels the replica and waits for Run to return.
func (r *testReplica) shutdown() {
	if r.closed {
		return
	}
	r.closed = true
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("replica %s: Run: %v", r.id, err)
		}
	case <-time.After(30 * time.Second):
		r.t.Errorf("replica %s: Run did not return 30s after cancel", r.id)
	}
}

func (r *testReplica) sighup() { r.hup <- syscall.SIGHUP }

// client is the replica's API client with token ("": none), closed at
// the end of the test.
func (r *testReplica) client(token string) *client.Client {
	r.t.Helper()
	if c, ok := r.tokens[token]; ok {
		return c
	}
	c, err := client.New(r.url, client.WithToken(token))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(c.CloseIdleConnections)
	if r.tokens == nil {
		r.tokens = map[string]*client.Client{}
	}
	r.tokens[token] = c
	return c
}

// trigger starts a manual run and returns its id.
func (r *testReplica) trigger(job, token string) string {
	r.t.Helper()
	tr, err := r.client(token).Trigger(context.Background(), job, nil, "")
	if err != nil {
		r.t.Fatalf("trigger %s: %v", job, err)
	}
	return tr.RunID
}

// waitRun waits until the run is in state and returns it.
func (r *testReplica) waitRun(id, state string, within time.Duration) client.Run {
	r.t.Helper()
	var got client.Run
	poll.Until(r.t, within, "run "+id+" "+state, func() (bool, string) {
		var err error
		if got, err = r.api.Run(context.Background(), id); err != nil {
			return false, err.Error()
		}
		return got.State == state, string(got.Raw)
	})
	return got
}

func (r *testReplica) status() client.Status {
	r.t.Helper()
	return r.statusWith("")
}

// jobNames lists GET /api/v1/jobs.
func (r *testReplica) jobNames() []string {
	r.t.Helper()
	js, err := r.api.Jobs(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	var names []string
	for _, j := range js {
		names = append(names, j.Name)
	}
	return names
}

// metric returns the value of one sample line of /metrics, by its exact
// name and labels as exposed, or -1.
func (r *testReplica) metric(series string) float64 {
	r.t.Helper()
	body, _ := r.api.Metrics(context.Background())
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// newEtcd starts an embedded etcd member for one test.
func newEtcd(t *testing.T) string {
	return etcdtest.Start(t).Endpoints()[0]
}

// statusWith reads /api/v1/status with a token.
func (r *testReplica) statusWith(token string) client.Status {
	r.t.Helper()
	st, err := r.client(token).Status(context.Background())
	if err != nil {
		r.t.Fatalf("GET /api/v1/status: %v", err)
	}
	return st
}
