package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// proc is one `scheduler run` process of a test.
type proc struct {
	t   *testing.T
	id  string
	cmd *exec.Cmd
	url string
	api *client.Client

	logs logtest.Sink // stderr: log records, and lines that are not (a race report, a panic)

	exited   chan struct{} // closed when the process is gone
	exitAt   time.Time
	exitCode int
}

// writeConfig writes a config on an external etcd with an isolated prefix.
func writeConfig(t *testing.T, endpoint, prefix, extra string) string {
	t.Helper()
	return writeConfigTTL(t, endpoint, prefix, 2*time.Second, extra)
}

// writeConfigTTL is writeConfig with the session TTL ttl.
func writeConfigTTL(t *testing.T, endpoint, prefix string, ttl time.Duration, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(etcdtest.ConfigTTL(endpoint, prefix, ttl, extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProc runs the binary and waits until it is ready; it is killed at
// cleanup if the test left it running.
func startProc(t *testing.T, id, config string) *proc {
	t.Helper()
	return startProcEnv(t, id, config)
}

// startProcEnv is startProc with env (KEY=VALUE) added to the test's.
func startProcEnv(t *testing.T, id, config string, env ...string) *proc {
	t.Helper()
	p := &proc{t: t, id: id, exited: make(chan struct{})}
	p.cmd = exec.Command(binary, "run", "--config", config, "--id", id, "--log-format", "json", "--log-level", "debug")
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if p.api != nil {
			p.api.CloseIdleConnections()
		}
	})
	go func() {
		_, _ = io.Copy(&p.logs, stderr)
		err := p.cmd.Wait()
		p.exitAt = time.Now()
		if ee, ok := err.(*exec.ExitError); ok {
			p.exitCode = ee.ExitCode()
		} else if err != nil {
			p.exitCode = -1
		}
		close(p.exited)
	}()
	poll.Until(t, 60*time.Second, id+" listening", func() (bool, string) {
		select {
		case <-p.exited:
			t.Fatalf("%s exited while starting (%d): %v", id, p.exitCode, p.logs.Records())
		default:
		}
		if rec := p.logs.Find("api listening"); rec != nil {
			p.url = "http://" + rec["addr"].(string)
			var err error
			if p.api, err = client.New(p.url); err != nil {
				t.Fatal(err)
			}
			return true, ""
		}
		return false, "no 'api listening' line"
	})
	poll.Until(t, 60*time.Second, id+" ready", func() (bool, string) {
		err := p.api.Ready(context.Background())
		return err == nil, fmt.Sprint(err)
	})
	return p
}

// leaderID is who GET /api/v1/leader names, or "".
func (p *proc) leaderID() string {
	l, err := p.api.Leader(context.Background())
	if err != nil {
		return ""
	}
	return l.ID
}

// waitLeader waits until p's API names id as the leader.
func (p *proc) waitLeader(id string) {
	p.t.Helper()
	poll.Until(p.t, 30*time.Second, p.id+" to see "+id+" lead", func() (bool, string) {
		l := p.leaderID()
		return l == id, "leader " + l
	})
}

func (p *proc) trigger(job string) string {
	p.t.Helper()
	tr, err := p.api.Trigger(context.Background(), job, nil, "")
	if err != nil {
		p.t.Fatalf("trigger %s: %v", job, err)
	}
	return tr.RunID
}

func (p *proc) waitRunning(runID string) client.Run {
	p.t.Helper()
	var st client.Run
	poll.Until(p.t, 30*time.Second, "run "+runID+" running", func() (bool, string) {
		var err error
		st, err = p.api.Run(context.Background(), runID)
		return err == nil && st.State == client.StateRunning, fmt.Sprintf("%s %v", st.State, err)
	})
	return st
}

func (p *proc) terminate() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
}

// waitExit waits for the process to end and returns its exit code.
func (p *proc) waitExit(within time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		if p.exitCode != 0 {
			other := p.logs.Other()
			other = other[max(0, len(other)-400):]
			p.t.Logf("%s exited %d; what it wrote besides log records:\n%s", p.id, p.exitCode, strings.Join(other, "\n"))
		}
		return p.exitCode
	case <-time.After(within):
		p.t.Fatalf("%s still running %s after SIGTERM", p.id, within)
		return -1
	}
}
