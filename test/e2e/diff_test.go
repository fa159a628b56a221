package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
)

// diffClusterConfig is the file the three replicas run: report sends a
// secret read from its headers file; busy runs one at a time, the others
// queued.
const diffClusterConfig = `
api:
  token_file: %[1]s
worker:
  shutdown_grace: 1s
jobs:
  - name: report
    schedule: "0 2 * * *"
    http:
      url: http://127.0.0.1:1/report
      headers_file: headers.yaml
  - name: busy
    schedule: "0 0 1 1 *"
    catch_up: none
    overlap: queue
    queue_limit: 5
    exec:
      command: ["sleep", "%[2]s"]
`

const (
	oldSecret = "Bearer old-secret-4c7d9e"
	newSecret = "Bearer new-secret-81a2f0"
)

// TestDiffAgainstThreeReplicas runs `scheduler diff` against a cluster of
// three replicas, reading /api/v1/config through the public client: a
// secret changed says "changed" and its value shows nowhere, neither in
// the diff nor in the API's answer; the runs of a job whose target
// changes are counted; the file the cluster runs shows no difference.
func TestDiffAgainstThreeReplicas(t *testing.T) {
	bin := schedulerBinary(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	files := map[string]string{
		"token":          "e2e-diff-token\n",
		"headers.yaml":   "Authorization: " + oldSecret + "\n",
		"scheduler.yaml": fmt.Sprintf(diffClusterConfig, token, "30"),
		// The change under review, in a directory of its own.
		"next/headers.yaml":   "Authorization: " + newSecret + "\n",
		"next/scheduler.yaml": fmt.Sprintf(diffClusterConfig, token, "31"),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var replicas []*replica
	start := func(id string, more ...string) {
		addr := freeAddr(t)
		flags := append([]string{"--id", id, "--listen", addr, "--data-dir", filepath.Join(dir, id)}, more...)
		replicas = append(replicas, runScheduler(t, bin, "scheduler.yaml", dir, addr, flags))
	}
	start("replica-a")
	endpoints := strings.Join(etcdEndpoints(t, replicas[0]), ",")
	start("replica-b", "--etcd-endpoints", endpoints)
	start("replica-c", "--etcd-endpoints", endpoints)
	var servers []string
	for _, r := range replicas {
		servers = append(servers, "http://"+r.Addr)
	}
	c, err := client.New(strings.Join(servers, ","), client.WithToken("e2e-diff-token"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	// One run of busy running, two queued behind it.
	for range 3 {
		if _, err := c.Trigger(ctx, "busy", nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, patience, "busy: 1 running, 2 queued", func() (bool, string) {
		j, err := c.Job(ctx, "busy")
		return err == nil && j.Running == 1 && j.Pending+j.Scheduled == 2, fmt.Sprintf("%+v %v", j.Job, err)
	})

	// The API's answer, with and without the token: no secret value.
	applied, err := c.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied.Config.Config.Jobs) != 2 || applied.Secrets["jobs.report.http.headers.Authorization"] == "" {
		t.Errorf("GET /api/v1/config: %s", applied.Raw)
	}
	_, yamlAnswer, err := replicas[1].get(ctx, "/api/v1/config", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, answer := range []string{string(applied.Raw), yamlAnswer} {
		if strings.Contains(answer, "secret-") || strings.Contains(answer, "e2e-diff-token") {
			t.Errorf("GET /api/v1/config shows a secret:\n%s", answer)
		}
	}

	diff := func(file string, more ...string) (string, int) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"diff", "--config", file, "--server", strings.Join(servers, ","),
			"--token-file", token}, more...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := diff("next/scheduler.yaml")
	want := `job busy: changed
  exec.command: ["sleep","30"] -> ["sleep","31"]
  runs now: 1 running, 2 queued: running runs finish with the old spec; scheduled ticks due more
    than 250ms ahead are planned again with the new one; manual runs and retries keep the old spec
job report: changed
  http.headers.Authorization: changed (secret, value not shown)
differences: jobs 2 changed
`
	if code != 3 || out != want {
		t.Errorf("diff: exit %d, output:\n%s\nwant exit 3 and:\n%s", code, out, want)
	}
	if strings.Contains(out, "secret-") {
		t.Errorf("diff shows a secret value:\n%s", out)
	}
	if out, code := diff("scheduler.yaml"); code != 0 || out != "no differences\n" {
		t.Errorf("diff of the file the cluster runs: exit %d\n%s", code, out)
	}
	if out, code := diff("scheduler.yaml", "--server", "http://"+freeAddr(t)); code != 1 || !strings.Contains(out, "no answer from") {
		t.Errorf("diff against no cluster: exit %d\n%s", code, out)
	}
}
