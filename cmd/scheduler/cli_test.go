package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// cli runs a client command in this process, as main would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e, false)
	return o.String(), e.String(), code
}

// cliJobs are the jobs the client commands are tried on: they run only
// when triggered.
const cliJobs = `jobs:
  - name: ok
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["sh", "-c", "echo working; echo done"]
  - name: fail
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["sh", "-c", "echo boom; exit 3"]
  - name: slow
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["sleep", "60"]
      kill_grace: 1s
`

// cliReplica starts one replica whose API needs a token for writes, and
// returns it with the flags that reach it.
func cliReplica(t *testing.T) (p *proc, server, tokenFile string) {
	t.Helper()
	etcd := etcdtest.Start(t)
	tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("cli-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, etcd.Endpoints()[0], "/cli/", "  token_file: "+tokenFile+"\n"+cliJobs)
	p = startProc(t, "a", cfg)
	p.waitLeader("a")
	return p, p.url, tokenFile
}

// closedURL is an address where nothing listens.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func decodes(t *testing.T, stdout string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("-o json output does not decode: %v\n%s", err, stdout)
	}
}

// Every client command against a real replica: tables for people, JSON
// that decodes, the API's message and exit 1 when it refuses, exit 2 for a
// bad command line, and trigger --wait's exit code following the outcome.
func TestClientCommands(t *testing.T) {
	p, server, tokenFile := cliReplica(t)
	srv := []string{"--server", server}
	auth := append([]string{"--token-file", tokenFile}, srv...)
	ctx := context.Background()
	with := func(a []string, args ...string) []string { return append(args, a...) }

	t.Run("jobs", func(t *testing.T) {
		out, errOut, code := cli(t, with(srv, "jobs")...)
		if code != 0 || !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "\nfail ") || !strings.Contains(out, "\nslow ") {
			t.Errorf("jobs: exit %d\n%s%s", code, out, errOut)
		}
		out, _, code = cli(t, with(srv, "jobs", "-o", "json")...)
		var list []client.Job
		decodes(t, out, &list)
		if code != 0 || len(list) != 3 || list[0].Name != "ok" || targetOf(&list[0].Spec) != "exec" {
			t.Errorf("jobs -o json: exit %d, %+v", code, list)
		}
		out, _, code = cli(t, with(srv, "jobs", "ok", "-o", "json")...)
		var one client.Job
		decodes(t, out, &one)
		if code != 0 || one.Name != "ok" || one.NextRun.IsZero() {
			t.Errorf("jobs ok -o json: exit %d, %+v", code, one)
		}
	})

	// --server as people copy it from api.listen or `members`: HOST:PORT,
	// or :PORT for this machine, as well as the full URL.
	t.Run("server as host:port", func(t *testing.T) {
		hostPort := strings.TrimPrefix(server, "http://")
		_, port, _ := net.SplitHostPort(hostPort)
		for _, s := range []string{hostPort, ":" + port} {
			out, errOut, code := cli(t, "jobs", "--server", s)
			if code != 0 || !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "\nslow ") {
				t.Errorf("jobs --server %s: exit %d\n%s%s", s, code, out, errOut)
			}
		}
	})

	t.Run("unknown job", func(t *testing.T) {
		_, apiErr := p.api.Job(ctx, "nope")
		e, ok := client.AsError(apiErr)
		if !ok || e.Code != client.CodeUnknownJob {
			t.Fatalf("the API on an unknown job: %v", apiErr)
		}
		for _, args := range [][]string{
			with(srv, "jobs", "nope"), with(srv, "runs", "nope"), with(auth, "trigger", "nope"),
			with(auth, "pause", "nope"), with(auth, "resume", "nope"),
		} {
			out, errOut, code := cli(t, args...)
			if code != 1 || out != "" || !strings.Contains(errOut, e.Message) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and the API's %q", args, code, out, errOut, e.Message)
			}
		}
	})

	var okRun string
	t.Run("trigger --wait succeeding", func(t *testing.T) {
		out, errOut, code := cli(t, with(auth, "trigger", "ok", "--wait")...)
		lines := strings.Split(out, "\n")
		okRun = lines[0]
		if code != 0 || !strings.HasPrefix(okRun, "ok@") || !strings.Contains(out, okRun+": succeeded (exit code 0) on replica a after ") ||
			!strings.Contains(out, "working\ndone\n") {
			t.Errorf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})

	t.Run("trigger --wait failing", func(t *testing.T) {
		out, errOut, code := cli(t, with(auth, "trigger", "--wait", "fail")...)
		if code != 1 || !strings.Contains(out, ": failed (exit code 3) on replica a") || !strings.Contains(out, "boom") {
			t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		out, _, code = cli(t, with(auth, "trigger", "--wait", "fail", "-o", "json")...)
		var r client.Run
		decodes(t, out, &r)
		if code != 1 || r.State != client.StateFinished || r.Outcome != "failed" || r.ExitCode == nil || *r.ExitCode != 3 {
			t.Errorf("-o json: exit %d, %+v", code, r)
		}
	})

	t.Run("trigger with input and key", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "input.json")
		if err := os.WriteFile(file, []byte("{\n  \"customer_id\": \"c-1001\"\n}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The answer's run_id is printed; the key names the run.
		for _, args := range [][]string{
			with(auth, "trigger", "ok", "--input", `{"customer_id": "c-1001"}`, "--idempotency-key", "sync-c-1001"),
			with(auth, "trigger", "ok", "--input", "@"+file),
		} {
			out, errOut, code := cli(t, args...)
			if code != 0 || !strings.HasPrefix(out, "ok@") || strings.Count(out, "\n") != 1 {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
			}
		}
		// The same key again: the same run, and nothing new.
		out, errOut, code := cli(t, with(auth, "trigger", "ok", "--idempotency-key", "sync-c-1001")...)
		if code != 0 || out != "ok@key-sync-c-1001\n" || !strings.Contains(errOut, "duplicate") {
			t.Errorf("repeated key: exit %d, stdout %q, stderr %q; want the same run id and a duplicate notice", code, out, errOut)
		}
		out, _, code = cli(t, with(auth, "trigger", "ok", "-o", "json")...)
		var tr client.Triggered
		decodes(t, out, &tr)
		if code != 0 || !strings.HasPrefix(tr.RunID, "ok@") {
			t.Errorf("-o json: exit %d, %+v", code, tr)
		}
	})

	t.Run("runs", func(t *testing.T) {
		out, errOut, code := cli(t, with(srv, "runs", "ok", "--limit", "50")...)
		if code != 0 || !strings.HasPrefix(out, "RUN ID ") || !strings.Contains(out, okRun+" ") {
			t.Errorf("runs ok: exit %d, want %s listed\n%s%s", code, okRun, out, errOut)
		}
		out, _, code = cli(t, with(srv, "runs", "fail", "-o", "json")...)
		var list []client.Run
		decodes(t, out, &list)
		if code != 0 || len(list) == 0 || list[0].Outcome != "failed" {
			t.Errorf("runs fail -o json: exit %d, %+v", code, list)
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		out, errOut, code := cli(t, with(auth, "pause", "ok")...)
		if code != 0 || out != "ok: paused\n" {
			t.Errorf("pause: exit %d, %q %q", code, out, errOut)
		}
		// A reason and an until go through the API and come back in the
		// job's JSON, the jobs table and pause's own answer.
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		out, errOut, code = cli(t, with(auth, "pause", "ok", "--reason", "deploy freeze", "--until", until.Format(time.RFC3339))...)
		if want := "ok: paused (deploy freeze) until " + until.Format(time.RFC3339) + "\n"; code != 0 || out != want {
			t.Errorf("pause --reason --until: exit %d, %q %q; want %q", code, out, errOut, want)
		}
		out, _, code = cli(t, with(srv, "jobs", "ok", "-o", "json")...)
		var j client.Job
		decodes(t, out, &j)
		if code != 0 || !j.Paused || j.PauseReason != "deploy freeze" || !j.PausedUntil.Equal(until) || j.PausedAt.IsZero() {
			t.Errorf("jobs ok -o json after a pause with reason and until: exit %d, paused %v, reason %q, at %s, until %s",
				code, j.Paused, j.PauseReason, j.PausedAt, j.PausedUntil)
		}
		out, _, code = cli(t, with(srv, "jobs")...)
		if cell := "paused until " + until.Format(time.RFC3339); code != 0 || !strings.Contains(out, cell) {
			t.Errorf("jobs table: exit %d, want %q in\n%s", code, cell, out)
		}
		out, _, code = cli(t, with(srv, "jobs", "-o", "wide")...)
		if cell := "yes until " + until.Format(time.RFC3339) + ": deploy freeze"; code != 0 || !strings.Contains(out, cell) {
			t.Errorf("jobs -o wide: exit %d, want %q in\n%s", code, cell, out)
		}
		_, errOut, code = cli(t, with(auth, "pause", "ok", "--until", "tomorrow")...)
		if code != 2 || !strings.Contains(errOut, `--until "tomorrow" is not an RFC 3339 time`) {
			t.Errorf("pause --until tomorrow: exit %d, %q; want a usage error", code, errOut)
		}
		_, errOut, code = cli(t, with(auth, "pause", "ok", "--until", "2020-01-01T00:00:00Z")...)
		if code != 1 || !strings.Contains(errOut, `job "ok": until 2020-01-01T00:00:00Z is not in the future`) {
			t.Errorf("pause --until in the past: exit %d, %q", code, errOut)
		}
		out, _, code = cli(t, with(auth, "resume", "ok", "-o", "json")...)
		j = client.Job{}
		decodes(t, out, &j)
		if code != 0 || j.Name != "ok" || j.Paused {
			t.Errorf("resume -o json: exit %d, %+v", code, j)
		}
	})

	t.Run("slots and cancel", func(t *testing.T) {
		out, errOut, code := cli(t, with(auth, "trigger", "slow")...)
		if code != 0 {
			t.Fatalf("trigger slow: exit %d %s", code, errOut)
		}
		slow := strings.TrimSpace(out)
		p.waitRunning(slow)
		// The run's state is read from etcd; the slot table comes from the
		// replica's watched view of the slots, which follows a moment later.
		poll.Until(t, 10*time.Second, "slots lists "+slow, func() (bool, string) {
			out, errOut, code := cli(t, with(srv, "slots")...)
			return code == 0 && strings.Contains(out, " "+slow+" "), fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
		})
		out, _, code = cli(t, with(srv, "slots", "-o", "json")...)
		var slots []client.Slot
		decodes(t, out, &slots)
		// Runs of the other jobs may still be ending: look at slow's.
		slots = slices.DeleteFunc(slots, func(s client.Slot) bool { return s.Job != "slow" })
		if code != 0 || len(slots) != 1 || slots[0].RunID != slow || slots[0].Holder != "a" {
			t.Errorf("slots -o json: exit %d, %+v", code, slots)
		}

		out, errOut, code = cli(t, with(auth, "cancel", slow, "--reason", "from the test")...)
		if code != 0 || out != slow+": cancel requested\n" {
			t.Errorf("cancel: exit %d, %q %q", code, out, errOut)
		}
		r, err := p.api.Wait(ctx, slow, 10*time.Millisecond)
		if err != nil || r.Outcome != "cancelled" || !strings.Contains(r.Error, "from the test") {
			t.Errorf("after cancel: %+v %v", r, err)
		}
		// Finished now: the API's 409 and its message.
		_, errOut, code = cli(t, with(auth, "cancel", slow)...)
		if code != 1 || !strings.Contains(errOut, "run_finished") {
			t.Errorf("cancel of a finished run: exit %d, %q", code, errOut)
		}
	})

	t.Run("leader and members", func(t *testing.T) {
		out, errOut, code := cli(t, with(srv, "leader")...)
		if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "\na ") {
			t.Errorf("leader: exit %d\n%s%s", code, out, errOut)
		}
		out, _, code = cli(t, with(srv, "leader", "-o", "json")...)
		var l client.Leader
		decodes(t, out, &l)
		if code != 0 || l.ID != "a" || l.Revision == 0 {
			t.Errorf("leader -o json: exit %d, %+v", code, l)
		}
		out, errOut, code = cli(t, with(srv, "members")...)
		if code != 0 || !strings.Contains(out, "\na ") || !strings.Contains(out, "true") {
			t.Errorf("members: exit %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("writes need the token", func(t *testing.T) {
		_, errOut, code := cli(t, with(srv, "trigger", "ok")...)
		if code != 1 || !strings.Contains(errOut, "this request needs the API token") || !strings.Contains(errOut, "--token-file") {
			t.Errorf("trigger without a token: exit %d, %q", code, errOut)
		}
	})

	// The built binary, with the server from the environment: main wires
	// the same commands.
	t.Run("binary and SCHEDULER_SERVER", func(t *testing.T) {
		cmd := exec.Command(binary, "members", "-o", "json")
		cmd.Env = append(os.Environ(), "SCHEDULER_SERVER="+server)
		out, err := cmd.Output()
		var ms []client.Member
		decodes(t, string(out), &ms)
		if err != nil || len(ms) != 1 || ms[0].ID != "a" || !ms[0].IsLeader {
			t.Errorf("members through the binary: %v, %+v", err, ms)
		}
	})
}
