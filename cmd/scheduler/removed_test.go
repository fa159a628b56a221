package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A job removed from the config by a reload keeps its history readable
// from the command line (scheduler runs, the API behind it) and is listed
// by scheduler jobs --removed; a name that never had a job stays unknown.
func TestRemovedJobHistoryFromTheCLI(t *testing.T) {
	etcd := etcdtest.Start(t)
	job := func(name string) string {
		return fmt.Sprintf("  - name: %s\n    schedule: \"0 0 1 1 *\"\n    catch_up: none\n    exec:\n      command: [\"echo\", \"hi\"]\n", name)
	}
	path := writeConfig(t, etcd.Endpoints()[0], "/removed-cli/", "jobs:\n"+job("gone")+job("kept"))
	p := startProc(t, "a", path)
	p.waitLeader("a")
	id := p.trigger("gone")
	poll.Until(t, 30*time.Second, "run "+id+" finished", func() (bool, string) {
		st, err := p.api.Run(context.Background(), id)
		return err == nil && st.State == client.StateFinished, fmt.Sprint(st.State, err)
	})

	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".new")
	if err := os.WriteFile(tmp, []byte(strings.Replace(string(content), job("gone"), "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	srv := []string{"--server", p.url}
	poll.Until(t, 30*time.Second, "gone listed as removed", func() (bool, string) {
		out, errOut, code := cli(t, append([]string{"jobs", "--removed"}, srv...)...)
		return code == 0 && strings.Contains(out, "\ngone "), out + errOut
	})
	out, errOut, code := cli(t, append([]string{"runs", "gone"}, srv...)...)
	if code != 0 || !strings.Contains(out, id) {
		t.Errorf("runs of the removed job: exit %d, want its run %s in\n%s%s", code, id, out, errOut)
	}
	out, _, code = cli(t, append([]string{"jobs", "--removed", "-o", "json"}, srv...)...)
	var removed []client.RemovedJob
	decodes(t, out, &removed)
	if code != 0 || len(removed) != 1 || removed[0].Name != "gone" || removed[0].RemovedAt.IsZero() {
		t.Errorf("jobs --removed -o json: exit %d, %+v", code, removed)
	}
	_, errOut, code = cli(t, append([]string{"runs", "never"}, srv...)...)
	if code != 1 || !strings.Contains(errOut, `no job "never"`) {
		t.Errorf("runs of a job that never was: exit %d, %q", code, errOut)
	}
}
