package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
)

// patience bounds every wait: CI is a noisy two-core machine, and a wait
// that ends on its condition costs nothing when the machine is fast.
const patience = 60 * time.Second

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// schedulerBinary builds ./cmd/scheduler once for the whole package.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		build.dir, build.err = os.MkdirTemp("", "scheduler-e2e-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "scheduler")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/scheduler")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/scheduler: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the scheduler module")
	}
	return filepath.Dir(gomod), nil
}

// freeAddr finds a loopback port nobody listens on. Another process could
// take it before the scheduler binds it; on a test machine that is rare
// enough to accept for a black-box test of the real command line.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// replica is one running `scheduler run`.
type replica struct {
	Addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // Wait's answer, set before done closes
}

// embeddedReplica is the start of a config for startScheduler: one replica
// on its embedded etcd, its data and API where startScheduler says.
const embeddedReplica = `cluster:
  data_dir: %[2]s
  session_ttl: 5s
api:
  listen: %[1]s
`

// startScheduler writes config, a format whose %[1]s is filled with the
// API address, %[2]s with the data dir and %[3]s on with args, and runs
// `scheduler run` with flags on it until the test ends.
func startScheduler(t *testing.T, flags []string, config string, args ...any) *replica {
	t.Helper()
	bin := schedulerBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	file := filepath.Join(dir, "scheduler.yaml")
	body := fmt.Sprintf(config, append([]any{addr, filepath.Join(dir, "data")}, args...)...)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return runScheduler(t, bin, file, dir, addr, flags)
}

// runScheduler runs `scheduler run` on file in dir with flags until the
// test ends; addr is where its API will answer.
func runScheduler(t *testing.T, bin, file, dir, addr string, flags []string) *replica {
	t.Helper()
	r := spawn(t, dir, addr, bin, append([]string{"run", "--config", file, "--log-format", "text"}, flags...)...)
	r.waitReady(t)
	return r
}

// spawn starts bin with args in dir until the test ends; addr is the API
// address it will serve, if any. Its output is logged if the test fails.
func spawn(t *testing.T, dir, addr, bin string, args ...string) *replica {
	t.Helper()
	r := &replica{Addr: addr, log: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Dir = dir
	r.cmd.Stdout = r.log
	r.cmd.Stderr = r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Stop(t)
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(args, " "), r.log.String())
		}
	})
	return r
}

// waitReady waits until /readyz answers 200, failing at once if the
// scheduler exits first.
func (r *replica) waitReady(t *testing.T) {
	t.Helper()
	c := r.api(t)
	poll.Until(t, patience, "scheduler ready at "+r.Addr, func() (bool, string) {
		select {
		case <-r.done:
			t.Fatalf("scheduler exited before it was ready: %v", r.err)
		default:
		}
		err := c.Ready(context.Background())
		return err == nil, fmt.Sprint(err)
	})
}

// Stop sends SIGTERM and waits for a clean exit; it kills the process if
// it does not go within the patience.
func (r *replica) Stop(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
		return
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("scheduler exited with %v after SIGTERM", r.err)
		}
	case <-time.After(patience):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("scheduler still running %v after SIGTERM; killed", patience)
	}
}

// api is a client of the replica's API; its kept-alive connections close
// when the test ends.
func (r *replica) api(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New("http://"+r.Addr, client.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// get fetches a path of the replica's API into a string, sending the
// bearer token when there is one.
func (r *replica) get(ctx context.Context, path, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(res.Body)
	return res.StatusCode, b.String(), err
}

// syncBuffer collects the process output written from two pipes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
