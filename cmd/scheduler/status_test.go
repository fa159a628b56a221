package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// `scheduler status` against a real replica whose sink is down and whose
// last reload failed: the replica, its version and leader, the config's
// path and hash, the reload error with its time, and the notification
// that waits for the sink; -o json carries the same fields.
func TestStatusCommand(t *testing.T) {
	etcd := etcdtest.Start(t)
	sink := closedURL(t)
	path := writeConfig(t, etcd.Endpoints()[0], "/status-cli/", fmt.Sprintf(`notify:
  sinks:
    - name: ops
      url: %s/hook
      on: [failed]
jobs:
  - name: fail
    schedule: "0 0 1 1 *"
    catch_up: none
    notify: [ops]
    exec:
      command: ["false"]
`, sink))
	p := startProc(t, "a", path)
	srv := []string{"--server", p.url}
	ctx := context.Background()
	p.waitLeader("a")
	if _, err := p.api.Wait(ctx, p.trigger("fail"), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("jobs: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var st client.Status
	poll.Until(t, 30*time.Second, "the reload refused and the notification pending", func() (bool, string) {
		var err error
		st, err = p.api.Status(ctx)
		return err == nil && st.LastReloadError != "" && st.PendingNotifications == 1, fmt.Sprintf("%+v %v", st, err)
	})

	out, errOut, code := cli(t, append([]string{"status"}, srv...)...)
	for _, want := range []string{
		"replica:        a, version ",
		"leader:         a (this replica)",
		"config:         " + path + ", hash " + st.ConfigHash,
		"last reload:    FAILED at " + stamp(st.LastReloadAt) + ", still running the config before it:\n" +
			strings.Repeat(" ", statusLabel) + cut(strings.SplitN(st.LastReloadError, "\n", 2)[0], defaultWidth-statusLabel),
		"notifications:  1 pending (ops 1), oldest created " + stamp(st.OldestNotification),
		"etcd:           " + etcd.Endpoints()[0],
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status: want %q\n%s", want, out)
		}
	}
	if code != 0 || st.OldestNotification.IsZero() || st.PendingBySink["ops"] != 1 || st.Leader != "a" {
		t.Errorf("status: exit %d, %+v\n%s", code, st, errOut)
	}
	out, _, code = cli(t, append([]string{"status", "-o", "json"}, srv...)...)
	var js client.Status
	decodes(t, out, &js)
	if code != 0 || js.ID != "a" || js.LastReloadError != st.LastReloadError || js.PendingNotifications != 1 || js.ConfigFile != path {
		t.Errorf("status -o json: exit %d, %+v", code, js)
	}
}

// A failed reload's errors, one a line as validation writes them, are
// listed under the value, each line cut to the width: no line breaks the
// alignment or runs past 100 columns (issue 34, item 5); -o wide cuts none.
func TestStatusListsReloadErrorsAligned(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 7, 0, 0, time.UTC)
	long := "jobs.yaml:14:15: jobs[1] \"report\": schedule: expected 5 or 6 fields, got 4; " + strings.Repeat("and more words ", 6)
	st := client.Status{}
	st.ID, st.Version, st.ConfigFile, st.ConfigHash, st.LastReloadAt = "a", "dev", "/etc/scheduler/jobs.yaml", "3fa9c2d17b40", at
	st.LastReloadError = "config: 2 problems:\n" + long + "\n\njobs.yaml:20:3: jobs[2] \"sync\": timeout: must be positive"
	var b strings.Builder
	if err := writeStatus(&b, view{width: defaultWidth}, st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	var errLines []string
	for _, l := range lines {
		if n := len([]rune(l)); n > defaultWidth {
			t.Errorf("line of %d columns: %q", n, l)
		}
		if strings.HasPrefix(l, strings.Repeat(" ", statusLabel)) {
			errLines = append(errLines, strings.TrimSpace(l))
		} else if !strings.Contains(l, ":  ") {
			t.Errorf("line %q is neither a fact nor an error under the value", l)
		}
	}
	if len(errLines) != 3 || errLines[0] != "config: 2 problems:" || !strings.HasPrefix(errLines[1], "jobs.yaml:14:15:") ||
		!strings.HasSuffix(errLines[1], "…") || errLines[2] != `jobs.yaml:20:3: jobs[2] "sync": timeout: must be positive` {
		t.Errorf("error lines %q\n%s", errLines, b.String())
	}
	b.Reset()
	if err := writeStatus(&b, view{wide: true}, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), strings.TrimSpace(long)) {
		t.Errorf("-o wide cut the error:\n%s", b.String())
	}
}
