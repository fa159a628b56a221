package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/replica"
	"github.com/etcdsched/scheduler/internal/target"
)

// exampleConfig is the replica the examples talk to: one job, "echo", that
// runs only when triggered.
const exampleConfig = `cluster: {data_dir: %q}
api: {listen: "127.0.0.1:0"}
jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    exec: {command: ["echo", "hello"]}
`

// TestMain runs one replica, with its embedded etcd, in this process for
// the examples, and tells them where it is in SCHEDULER_SERVER, as a user
// of the client would. Exec runs re-execute this binary as their
// supervisor, as the scheduler's main does.
func TestMain(m *testing.M) {
	if code, ok := target.Supervise(os.Args); ok {
		os.Exit(code)
	}
	stop, err := startExampleReplica()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the examples' replica:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func startExampleReplica() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, exampleConfig, filepath.Join(dir, "data")), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	logs := &logtest.Sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- replica.Run(ctx, replica.Options{Config: cfg, ConfigPath: path, ID: "example", Version: "test",
			Logger: slog.New(slog.NewJSONHandler(logs, nil)), NoWatch: true})
	}()
	stop = func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	var c *Client
	ok := poll.Within(60*time.Second, func() bool {
		if c == nil {
			rec := logs.Find("api listening")
			if rec == nil {
				return false
			}
			c, _ = New("http://" + rec["addr"].(string))
		}
		if c.Ready(ctx) != nil {
			return false
		}
		_, err := c.Leader(ctx)
		return err == nil
	})
	if !ok {
		stop()
		return nil, fmt.Errorf("not ready within 60s; logs: %v", logs.Records())
	}
	c.CloseIdleConnections()
	os.Setenv("SCHEDULER_SERVER", c.Server())
	return stop, nil
}
