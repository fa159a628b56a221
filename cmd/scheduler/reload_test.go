package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The binary reloads on SIGHUP: a valid file swaps the jobs and the config
// hash on /api/v1/status and /api/v1/members; an invalid one is refused
// with FILE:LINE:COL on /api/v1/status and counted as an error, and the
// jobs stay.
func TestSIGHUPReloads(t *testing.T) {
	etcd := etcdtest.Start(t)
	jobs := func(names ...string) string {
		var b strings.Builder
		b.WriteString("jobs:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "  - name: %s\n    schedule: \"@every 1s\"\n    exec:\n      command: [\"true\"]\n", n)
		}
		return b.String()
	}
	path := writeConfig(t, etcd.Endpoints()[0], "/sighup/", jobs("old", "kept"))
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header := strings.TrimSuffix(string(content), jobs("old", "kept"))
	replace := func(s string) {
		tmp := filepath.Join(filepath.Dir(path), ".new")
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	jobNames := func(p *proc) []string {
		js, err := p.api.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range js {
			out = append(out, j.Name)
		}
		return out
	}

	a := startProc(t, "a", path)
	before := a.status()

	replace(header + jobs("kept", "new"))
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "reloaded jobs", func() (bool, string) {
		got := jobNames(a)
		return slices.Equal(got, []string{"kept", "new"}), fmt.Sprint(got)
	})
	poll.Until(t, 10*time.Second, "SIGHUP logged", func() (bool, string) {
		return a.logs.Find("SIGHUP: reloading the config") != nil, "no line"
	})
	after := a.status()
	var members []client.Member
	poll.Until(t, 10*time.Second, "member hash", func() (bool, string) {
		var err error
		if members, err = a.api.Members(context.Background()); err != nil {
			t.Fatal(err)
		}
		return len(members) == 1 && members[0].ConfigHash == after.ConfigHash, fmt.Sprint(members)
	})
	if after.ConfigHash == before.ConfigHash || after.LastReloadError != "" {
		t.Errorf("status before %s, after %s", before.Raw, after.Raw)
	}

	replace(header + jobs("kept", "new") + "    bogus: 1\n")
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var st client.Status
	poll.Until(t, 10*time.Second, "reload error on status", func() (bool, string) {
		st = a.status()
		return st.LastReloadError != "", "none"
	})
	if want := path + ":18:5: jobs[1] \"new\": unknown field \"bogus\""; st.LastReloadError != want || st.ConfigHash != after.ConfigHash {
		t.Errorf("status %s, want the error at %s and the hash kept", st.Raw, want)
	}
	scrape, err := a.api.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// SIGHUP and the file watcher may both have seen the bad file; at
	// least one of them counted it.
	if !strings.Contains(scrape, `scheduler_config_reloads_total{result="error"} `) ||
		strings.Contains(scrape, `scheduler_config_reloads_total{result="error"} 0`) {
		t.Errorf("no error counted in the metric")
	}
	if got := jobNames(a); !slices.Equal(got, []string{"kept", "new"}) {
		t.Errorf("jobs after a refused reload: %v", got)
	}
	a.terminate()
	if code := a.waitExit(30 * time.Second); code != 0 {
		t.Errorf("exit %d", code)
	}
}

func (p *proc) status() client.Status {
	p.t.Helper()
	st, err := p.api.Status(context.Background())
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}
