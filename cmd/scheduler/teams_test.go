package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// scheduler jobs and slots show each job's team, "-" for the main
// file's, and --team lists one team's (docs/configuration.md, "Teams and
// tokens").
func TestJobsTeamColumnAndFilter(t *testing.T) {
	etcd := etcdtest.Start(t)
	path := writeConfig(t, etcd.Endpoints()[0], "/teamcli/", `include: ["teams/*.yaml"]
jobs:
  - name: cleanup
    schedule: "0 0 1 1 *"
    exec:
      command: ["true"]
`)
	dir := filepath.Join(filepath.Dir(path), "teams")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	team := "team: payments\njobs:\n  - name: settle\n    schedule: \"0 0 1 1 *\"\n    exec:\n      command: [\"sleep\", \"60\"]\n      kill_grace: 1s\n"
	if err := os.WriteFile(filepath.Join(dir, "payments.yaml"), []byte(team), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "a", path)
	out, errOut, code := cli(t, "jobs", "--server", p.url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME     TEAM      SCHEDULE") ||
		!strings.HasPrefix(lines[1], "cleanup  -         ") || !strings.HasPrefix(lines[2], "settle   payments  ") {
		t.Errorf("jobs: exit %d, want a TEAM column\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "jobs", "--team", "payments", "--server", p.url)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "settle ") {
		t.Errorf("jobs --team payments: exit %d, want settle alone\n%s%s", code, out, errOut)
	}

	// A held slot names its job's team; --team keeps one team's slots.
	p.waitRunning(p.trigger("settle"))
	out, errOut, code = cli(t, "slots", "--server", p.url)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], " TEAM") || !strings.Contains(lines[1], " payments") {
		t.Errorf("slots: exit %d, want one slot of team payments\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "slots", "--team", "search", "--server", p.url)
	if lines = strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 1 {
		t.Errorf("slots --team search: exit %d, want no slot\n%s%s", code, out, errOut)
	}
}
