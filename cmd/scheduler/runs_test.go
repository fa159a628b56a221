package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// runsJobs: a job whose runs queue, so every trigger of the test runs.
const runsJobs = `jobs:
  - name: hist
    schedule: "0 0 1 1 *"
    catch_up: none
    overlap: queue
    exec:
      command: ["true"]
`

// runsTable splits `scheduler runs` output into its header and rows, by
// runs of two or more spaces (cells hold single spaces).
func runsTable(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	split := func(l string) []string {
		var cells []string
		for _, c := range strings.Split(l, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		return cells
	}
	header = split(lines[0])
	for _, l := range lines[1:] {
		rows = append(rows, split(l))
	}
	return header, rows
}

// `scheduler runs -o wide` against a real replica: an INPUT column once a listed
// run has an input, with the compact input on that run's row and "-" on
// the others; none when no listed run has one. --before pages back
// through the whole history, and a --before naming no run is the API's
// 404 and exit 1.
func TestRunsCommand(t *testing.T) {
	etcd := etcdtest.Start(t)
	p := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], "/runs-cli/", runsJobs))
	srv := []string{"--server", p.url}
	ctx := context.Background()
	trigger := func(input string) string {
		t.Helper()
		args := []string{"trigger", "hist", "--wait"}
		if input != "" {
			args = append(args, "--input", input)
		}
		out, errOut, code := cli(t, append(args, srv...)...)
		if code != 0 {
			t.Fatalf("trigger %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return strings.SplitN(out, "\n", 2)[0]
	}

	var ids []string // newest first
	for range 3 {
		ids = append([]string{trigger("")}, ids...)
	}
	out, errOut, code := cli(t, append([]string{"runs", "hist", "-o", "wide"}, srv...)...)
	header, rows := runsTable(t, out)
	if code != 0 || slices.Contains(header, "INPUT") || len(rows) != 3 {
		t.Errorf("runs without inputs: exit %d, header %q, %d rows; want no INPUT column and 3 rows\n%s%s", code, header, len(rows), out, errOut)
	}

	withInput := trigger(`{"customer_id": "c-1001",  "tier": "gold"}`)
	ids = append([]string{withInput}, ids...)
	out, errOut, code = cli(t, append([]string{"runs", "hist", "-o", "wide"}, srv...)...)
	header, rows = runsTable(t, out)
	if code != 0 || len(header) == 0 || header[len(header)-1] != "INPUT" || len(rows) != 4 {
		t.Fatalf("runs with an input: exit %d, header %q, %d rows; want INPUT last and 4 rows\n%s%s", code, header, len(rows), out, errOut)
	}
	for i, row := range rows {
		want := "-"
		if i == 0 {
			want = `{"customer_id":"c-1001","tier":"gold"}`
		}
		if row[0] != ids[i] || row[len(row)-1] != want {
			t.Errorf("row %d: %q; want run %s with INPUT %s", i, row, ids[i], want)
		}
	}

	// Back through the history two at a time, each page from the oldest
	// run of the one before.
	var paged []string
	before := ""
	for range 10 {
		args := append([]string{"runs", "hist", "--limit", "2", "-o", "json"}, srv...)
		if before != "" {
			args = append(args, "--before", before)
		}
		out, errOut, code := cli(t, args...)
		var list []client.Run
		decodes(t, out, &list)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		if len(list) == 0 {
			break
		}
		for _, r := range list {
			paged = append(paged, r.RunID)
		}
		before = list[len(list)-1].RunID
	}
	if !slices.Equal(paged, ids) {
		t.Errorf("runs --limit 2 --before, page by page: %q; want every run once, newest first: %q", paged, ids)
	}

	_, apiErr := p.api.Runs(ctx, "hist", 1, "hist@nope")
	e, ok := client.AsError(apiErr)
	if !ok || e.Code != "unknown_run" {
		t.Fatalf("the API on an unknown before: %v", apiErr)
	}
	out, errOut, code = cli(t, append([]string{"runs", "hist", "--before", "hist@nope"}, srv...)...)
	if code != 1 || out != "" || !strings.Contains(errOut, e.Message) {
		t.Errorf("runs --before hist@nope: exit %d, stdout %q, stderr %q; want 1 and the API's %q", code, out, errOut, e.Message)
	}
}
