package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func (p *proc) getJSON(path string, v any) {
	p.t.Helper()
	code, body := p.do(http.MethodGet, path)
	if code != http.StatusOK {
		p.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
}

type statusBody struct {
	ConfigHash      string `json:"config_hash"`
	LastReloadError string `json:"last_reload_error"`
}

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
		var js []struct{ Name string }
		p.getJSON("/api/v1/jobs", &js)
		var out []string
		for _, j := range js {
			out = append(out, j.Name)
		}
		return out
	}

	a := startProc(t, "a", path)
	var before statusBody
	a.getJSON("/api/v1/status", &before)

	replace(header + jobs("kept", "new"))
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "reloaded jobs", func() (bool, string) {
		got := jobNames(a)
		return slices.Equal(got, []string{"kept", "new"}), fmt.Sprint(got)
	})
	poll.Until(t, 10*time.Second, "SIGHUP logged", func() (bool, string) {
		return a.find("SIGHUP: reloading the config") != nil, "no line"
	})
	var after statusBody
	a.getJSON("/api/v1/status", &after)
	var members []struct {
		ID         string `json:"id"`
		ConfigHash string `json:"config_hash"`
	}
	poll.Until(t, 10*time.Second, "member hash", func() (bool, string) {
		a.getJSON("/api/v1/members", &members)
		return len(members) == 1 && members[0].ConfigHash == after.ConfigHash, fmt.Sprint(members)
	})
	if after.ConfigHash == before.ConfigHash || after.LastReloadError != "" {
		t.Errorf("status before %+v, after %+v", before, after)
	}

	replace(header + jobs("kept", "new") + "    bogus: 1\n")
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var st statusBody
	poll.Until(t, 10*time.Second, "reload error on status", func() (bool, string) {
		a.getJSON("/api/v1/status", &st)
		return st.LastReloadError != "", "none"
	})
	if want := path + ":18:5: jobs[1]: unknown field \"bogus\""; st.LastReloadError != want || st.ConfigHash != after.ConfigHash {
		t.Errorf("status %+v, want the error at %s and the hash kept", st, want)
	}
	_, scrape := a.do(http.MethodGet, "/metrics")
	// SIGHUP and the file watcher may both have seen the bad file; at
	// least one of them counted it.
	if !strings.Contains(string(scrape), `scheduler_config_reloads_total{result="error"} `) ||
		strings.Contains(string(scrape), `scheduler_config_reloads_total{result="error"} 0`) {
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
