package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"),
		// The process collector's and net/http's idle pools live for the
		// test binary's lifetime.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// configYAML is a config for the tests: an external etcd, an isolated
// prefix, short TTLs, the API on a kernel-chosen port, and jobs.
func configYAML(endpoint, prefix, extra string) string {
	return fmt.Sprintf(`cluster:
  etcd:
    endpoints: [%q]
    prefix: %s
  session_ttl: 2s
  lease_margin: 500ms
api:
  listen: 127.0.0.1:0
%s`, endpoint, prefix, extra)
}

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

// logSink collects a replica's JSON log lines.
type logSink struct {
	mu    sync.Mutex
	lines []map[string]any
	buf   bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for {
		line, err := s.buf.ReadBytes('\n')
		if err != nil {
			s.buf.Write(line) // incomplete: keep for the next write
			break
		}
		var rec map[string]any
		if json.Unmarshal(line, &rec) == nil {
			s.lines = append(s.lines, rec)
		}
	}
	return len(p), nil
}

// find returns the first line with msg, or nil.
func (s *logSink) find(msg string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.lines {
		if rec["msg"] == msg {
			return rec
		}
	}
	return nil
}

// testReplica is one replica.Run in this process.
type testReplica struct {
	t      *testing.T
	id     string
	url    string
	logs   *logSink
	hup    chan os.Signal
	http   *http.Client
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
	r := &testReplica{t: t, id: id, logs: &logSink{}, hup: make(chan os.Signal, 1), done: make(chan error, 1),
		http: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}}
	o := Options{Config: cfg, ConfigPath: path, ID: id, Version: "test",
		Logger: slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Reload: r.hup}
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
		rec := r.logs.find("api listening")
		if rec == nil {
			return false, "no 'api listening' line yet"
		}
		r.url = "http://" + rec["addr"].(string)
		return true, ""
	})
	poll.Until(t, 30*time.Second, id+" ready", func() (bool, string) {
		code, body := r.get("/readyz", "")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	poll.Until(t, 30*time.Second, id+" sees a leader", func() (bool, string) {
		code, body := r.get("/api/v1/leader", "")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
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
	r.http.CloseIdleConnections()
}

func (r *testReplica) sighup() { r.hup <- syscall.SIGHUP }

func (r *testReplica) do(method, path, token string) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.url+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (r *testReplica) get(path, token string) (int, []byte) {
	r.t.Helper()
	return r.do(http.MethodGet, path, token)
}

// getJSON decodes a 200 answer into v.
func (r *testReplica) getJSON(path string, v any) {
	r.t.Helper()
	code, body := r.get(path, "")
	if code != http.StatusOK {
		r.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		r.t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

// trigger starts a manual run and returns its id.
func (r *testReplica) trigger(job, token string) string {
	r.t.Helper()
	code, body := r.do(http.MethodPost, "/api/v1/jobs/"+job+"/trigger", token)
	if code != http.StatusAccepted {
		r.t.Fatalf("trigger %s: %d %s", job, code, body)
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		r.t.Fatal(err)
	}
	return out.RunID
}

// run is the part of GET /api/v1/runs/{id} the tests look at.
type run struct {
	State       string    `json:"state"`
	RunID       string    `json:"run_id"`
	Job         string    `json:"job"`
	Outcome     string    `json:"outcome"`
	Holder      string    `json:"holder"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Error       string    `json:"error"`
}

// waitRun waits until the run is in state and returns it.
func (r *testReplica) waitRun(id, state string, within time.Duration) run {
	r.t.Helper()
	var got run
	poll.Until(r.t, within, "run "+id+" "+state, func() (bool, string) {
		code, body := r.get("/api/v1/runs/"+id, "")
		if code != http.StatusOK {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		got = run{}
		_ = json.Unmarshal(body, &got)
		return got.State == state, string(body)
	})
	return got
}

// status is the part of GET /api/v1/status the tests look at.
type status struct {
	ConfigHash      string `json:"config_hash"`
	LastReloadError string `json:"last_reload_error"`
}

func (r *testReplica) status() status {
	var st status
	r.getJSON("/api/v1/status", &st)
	return st
}

// jobNames lists GET /api/v1/jobs.
func (r *testReplica) jobNames() []string {
	var js []struct {
		Name string `json:"name"`
	}
	r.getJSON("/api/v1/jobs", &js)
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
	_, body := r.get("/metrics", "")
	for _, line := range strings.Split(string(body), "\n") {
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
func (r *testReplica) statusWith(token string) status {
	r.t.Helper()
	var st status
	code, body := r.get("/api/v1/status", token)
	if code != http.StatusOK {
		r.t.Fatalf("GET /api/v1/status: %d %s", code, body)
	}
	if err := json.Unmarshal(body, &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}
