package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// teamJobs is the payments team's file: settle holds its slot a minute,
// quick ends at once.
const teamJobs = `team: payments
jobs:
  - name: settle
    schedule: "0 0 1 1 *"
    exec:
      command: ["sleep", "60"]
      kill_grace: 1s
  - name: quick
    schedule: "0 0 1 1 *"
    exec:
      command: ["true"]
`

// scheduler jobs, runs and slots show each job's team ("-" for the main
// file's) and --team keeps one team's (docs/configuration.md, "Teams and
// tokens").
func TestTeamColumnsAndFilters(t *testing.T) {
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
	if err := os.WriteFile(filepath.Join(dir, "payments.yaml"), []byte(teamJobs), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "a", path)
	out, errOut, code := cli(t, "jobs", "--server", p.url)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME     TEAM      SCHEDULE") ||
		!strings.HasPrefix(lines[1], "cleanup  -         ") || !strings.HasPrefix(lines[2], "settle   payments  ") {
		t.Errorf("jobs: exit %d, want a TEAM column\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "jobs", "--team", "payments", "--server", p.url)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "settle ") || !strings.HasPrefix(lines[2], "quick ") {
		t.Errorf("jobs --team payments: exit %d, want settle and quick\n%s%s", code, out, errOut)
	}

	if _, err := p.api.Wait(context.Background(), p.trigger("quick"), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]int{"payments": 1, "search": 0} {
		out, errOut, code = cli(t, "runs", "quick", "--team", team, "-o", "json", "--server", p.url)
		var runs []struct{ Team string }
		decodes(t, out, &runs)
		if code != 0 || len(runs) != want || (want > 0 && runs[0].Team != "payments") {
			t.Errorf("runs quick --team %s: exit %d, %+v, want %d of team payments\n%s%s", team, code, runs, want, out, errOut)
		}
	}
	// The table says whose runs they are, as jobs does: a TEAM column after
	// the run id, by default once a run has a team; "-" for the main
	// file's jobs, whose column waits for -o wide.
	out, errOut, code = cli(t, "runs", "quick", "--server", p.url)
	header, rows := runsTable(t, out)
	if code != 0 || len(header) < 2 || header[1] != "TEAM" || len(rows) != 1 || rows[0][1] != "payments" {
		t.Errorf("runs quick: exit %d, header %q, rows %q; want TEAM second, payments\n%s%s", code, header, rows, out, errOut)
	}
	if _, err := p.api.Wait(context.Background(), p.trigger("cleanup"), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{"": "OUTCOME", "-o wide": "TEAM"} {
		out, errOut, code = cli(t, append([]string{"runs", "cleanup", "--server", p.url}, strings.Fields(args)...)...)
		header, rows = runsTable(t, out)
		if code != 0 || len(header) < 2 || header[1] != want || len(rows) != 1 || (want == "TEAM" && rows[0][1] != "-") {
			t.Errorf("runs cleanup %s: exit %d, header %q, rows %q; want %s second\n%s%s", args, code, header, rows, want, out, errOut)
		}
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
