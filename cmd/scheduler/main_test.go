package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
)

// binary is the real scheduler, built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scheduler-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "scheduler")
	out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	// The client commands run in this process: each must close what it
	// opened. Checked once at the end, as goleak.VerifyTestMain does, but
	// after the binary's directory is gone.
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// Every bad file prints exactly the problems config.Load reports (their
// exact text is pinned in config's own tests) and exits 1.
func TestValidateBadFiles(t *testing.T) {
	files, err := filepath.Glob("../../config/testdata/*.bad.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("want at least 20 bad files, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, loadErr := config.Load(f)
			var problems *config.Error
			if !errors.As(loadErr, &problems) {
				t.Fatalf("config.Load(%s) = %v, want problems", f, loadErr)
			}
			stdout, stderr, code := runBinary(t, "validate", "--config", f)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if strings.TrimSpace(stderr) != problems.Error() {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, problems.Error())
			}
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if !strings.HasPrefix(line, f+":") {
					t.Errorf("line %q does not start with FILE:", line)
				}
			}
		})
	}
}

func TestValidateExample(t *testing.T) {
	stdout, stderr, code := runBinary(t, "validate", "--config", "../../config/example.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "ok") {
		t.Errorf("stdout = %q", stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", "../../config/example.yaml", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"validate", "--config", "/nonexistent/jobs.yaml"}, "/nonexistent/jobs.yaml: no such file or directory"},
		{[]string{"run", "--config", "/nonexistent/jobs.yaml"}, "/nonexistent/jobs.yaml: no such file or directory"},
		{[]string{"validate"}, "--config is required"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "--config", "../../config/example.yaml", "--log-format", "xml"}, `--log-format "xml"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := runBinary(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q", stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := runBinary(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "scheduler ") {
		t.Fatalf("version: exit %d, %q", code, stdout)
	}
}

// The quick start: the example config on embedded etcd becomes ready, and
// SIGTERM stops it cleanly with nothing left listening.
func TestRunExampleOnEmbeddedEtcd(t *testing.T) {
	cmd := exec.Command(binary, "run", "--config", "../../config/example.yaml",
		"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logs := make(chan map[string]any, 1024)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				logs <- rec
			} else {
				t.Logf("non-JSON log line: %s", sc.Text())
			}
		}
	}()

	var apiAddr string
	var etcdAddrs []string
	deadline := time.After(60 * time.Second)
	for apiAddr == "" {
		select {
		case rec, ok := <-logs:
			if !ok {
				t.Fatal("scheduler exited before listening")
			}
			switch rec["msg"] {
			case "api listening":
				apiAddr, _ = rec["addr"].(string)
			case "embedded etcd started":
				for _, ep := range rec["endpoints"].([]any) {
					u, _ := url.Parse(ep.(string))
					etcdAddrs = append(etcdAddrs, u.Host)
				}
			}
		case <-deadline:
			t.Fatal("no 'api listening' log line within 60s")
		}
	}
	if len(etcdAddrs) == 0 {
		t.Fatal("no embedded etcd endpoint logged")
	}
	waitReady(t, "http://"+apiAddr, 60*time.Second)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for range logs {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("still running 60s after SIGTERM")
	}
	for _, addr := range append([]string{apiAddr}, etcdAddrs...) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after exit", addr)
		}
	}
}

func waitReady(t *testing.T, server string, within time.Duration) {
	t.Helper()
	c, err := client.New(server)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	poll.Until(t, within, server+" ready", func() (bool, string) {
		err := c.Ready(context.Background())
		return err == nil, fmt.Sprint(err)
	})
}
