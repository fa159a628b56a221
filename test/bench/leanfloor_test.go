package main

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLeanCursorsDueEachJobOncePerWindow(t *testing.T) {
	const n = 1000
	for start := range int64(3) {
		seen := make([]int, n)
		for i := start; i < start+leanWindow; i++ {
			due := leanCursorsDue(n, i, leanWindow)
			if len(due) < n/leanWindow || len(due) > n/leanWindow+1 {
				t.Errorf("instant %d moves %d cursors, want about %d", i, len(due), n/leanWindow)
			}
			for _, j := range due {
				seen[j]++
			}
		}
		for j, c := range seen {
			if c != 1 {
				t.Fatalf("instants %d..%d move job %d's cursor %d times, want once", start, start+leanWindow-1, j, c)
			}
		}
	}
}

func TestLeanAuthorizeGroupsFitTheCompares(t *testing.T) {
	cursors := leanCursorsDue(4000, 0, leanWindow) // 572 cursors
	groups := leanAuthorizeGroups(cursors, 3, leanMaxCmps)
	if got := 1 + 3 + len(groups[0]); got != leanMaxCmps {
		t.Errorf("the first transaction has %d compares (fence, 3 assignments, %d cursors), want %d", got, len(groups[0]), leanMaxCmps)
	}
	var all []int
	for i, g := range groups {
		if i > 0 && 1+len(g) > leanMaxCmps {
			t.Errorf("transaction %d has %d compares, more than %d", i, 1+len(g), leanMaxCmps)
		}
		all = append(all, g...)
	}
	if !slices.Equal(all, cursors) {
		t.Errorf("the groups carry %d cursors, want each of the %d once, in order", len(all), len(cursors))
	}
	if g := leanAuthorizeGroups(nil, 3, leanMaxCmps); len(g) != 1 || len(g[0]) != 0 {
		t.Errorf("an instant without cursors: %v, want one empty group (its assignments)", g)
	}
}

func TestLeanChunksAndNames(t *testing.T) {
	jobs := leanAssign(7, 3)
	if !slices.Equal(jobs[0], []int{0, 3, 6}) || !slices.Equal(jobs[2], []int{2, 5}) {
		t.Errorf("leanAssign(7, 3) = %v, want jobs i mod 3", jobs)
	}
	chunks := leanChunks(make([]int, 95), leanChunk)
	if len(chunks) != 3 || len(chunks[0]) != 40 || len(chunks[2]) != 15 {
		t.Errorf("95 runs in chunks of 40: sizes %d, want 40, 40, 15", len(chunks))
	}
	if got := leanNames(jobs[2]); got != "job-00002,job-00005" {
		t.Errorf("leanNames = %q", got)
	}
}

func TestLeanPredict(t *testing.T) {
	// n = 3, w = 3, over 7 instants: each instant the fence and 3
	// assignments (compare, put) = 7 ops, 3 cursors in all (6 ops); each
	// worker's one run: claim 2 + 4, release 3, cleanup 2 x (1 + 1) = 13
	// ops in 3 revisions. (7*7 + 6 + 7*3*13) / 21 runs; (7 + 7*3*3) / 21.
	got := leanPredict(3, 3, 0, true)
	if math.Abs(got.IndexOps-328.0/21) > 1e-9 || math.Abs(got.Revisions-70.0/21) > 1e-9 {
		t.Errorf("leanPredict(3, 3, 0, true) = %+v, want 328/21 ops and 70/21 revisions", got)
	}
	// With a history each job's range delete every 10 instants, in a
	// release: a tenth of an operation a run, no revision.
	got = leanPredict(3, 3, 100, true)
	if math.Abs(got.IndexOps-(328.0/21+0.1)) > 1e-9 || math.Abs(got.Revisions-70.0/21) > 1e-9 {
		t.Errorf("leanPredict(3, 3, 100, true) = %+v, want 328/21 + 0.1 ops and 70/21 revisions", got)
	}
	// docs/protocol.md's table: about 7.4 at N = 1,000, W = 3.
	if got := leanPredict(1000, 3, 0, true); got.IndexOps < 7.3 || got.IndexOps > 7.5 {
		t.Errorf("leanPredict(1000, 3, 0, true) = %.3f index ops per run, docs/protocol.md predicts ~7.4", got.IndexOps)
	}
	// Without a slot a run: claim 2 + 2, release 1, cleanup 4 = 9 ops a
	// worker's run in the same 3 revisions. (7*7 + 6 + 7*3*9) / 21 runs.
	got = leanPredict(3, 3, 0, false)
	if math.Abs(got.IndexOps-244.0/21) > 1e-9 || math.Abs(got.Revisions-70.0/21) > 1e-9 {
		t.Errorf("leanPredict(3, 3, 0, false) = %+v, want 244/21 ops and 70/21 revisions", got)
	}
	// Four operations a run fewer at any size.
	if with, without := leanPredict(1000, 3, 100, true), leanPredict(1000, 3, 100, false); math.Abs(with.IndexOps-without.IndexOps-4) > 1e-9 {
		t.Errorf("1,000 runs: %.3f index ops a run with a slot, %.3f without: want 4 apart", with.IndexOps, without.IndexOps)
	}
}

func TestLeanCheck(t *testing.T) {
	if err := leanCheck(4000, 3); err != nil {
		t.Errorf("4000 runs, 3 workers: %v", err)
	}
	for _, n := range []int{0, leanMaxChunks*leanChunk*3 + 1} {
		err := leanCheck(n, 3)
		if err == nil || !strings.Contains(err.Error(), "runs per instant") {
			t.Errorf("leanCheck(%d, 3) = %v, want an error naming the runs per instant", n, err)
		}
	}
}

func TestMVCCPerMemberAndIndexOps(t *testing.T) {
	c0 := map[string]float64{mvccRange: 30, mvccPut: 9, mvccDelete: 3, mvccTxn: 6}
	c1 := map[string]float64{mvccRange: 60, mvccPut: 21, mvccDelete: 9, mvccTxn: 12}
	m := mvccPerMember(c0, c1, 3)
	if m["range_total"] != 10 || m["put_total"] != 4 || m["delete_total"] != 2 || m["txn_total"] != 2 {
		t.Errorf("mvccPerMember = %v, want range 10, put 4, delete 2, txn 2", m)
	}
	if got := indexOps(m); got != 16 {
		t.Errorf("indexOps = %v, want 16 (range + put + delete, not txn)", got)
	}
}

func TestPrintLeanFloorBesideTheReference(t *testing.T) {
	lean := leanResult{Workers: 3, CursorWindow: leanWindow, Chunk: leanChunk, ReleaseBatch: leanRelease,
		Steps: []leanStep{{RunsPerInstant: 500, RunsPerSec: 499, EtcdCPUPerRun: 0.123, EtcdCPUAboveIdle: 0.1}, {RunsPerInstant: 700}},
		Floor: &floorStep{Batch: 40, Runs: 100, Revisions: 300, RunsPerSec: 900, EtcdCPUPerRun: 0.456, IndexOpsPerRun: 13}}
	b := burstResult{Steps: []burstStep{{Jobs: 500, Ref: &burstSide{EtcdCPUPerRun: 0.077, IndexOpsPerRun: 2, RevsPerRun: 1}}}}
	var out bytes.Buffer
	printLeanFloor(&out, []report{{Data: lean}, {Data: b}})
	lines := strings.Split(out.String(), "\n")
	var row500, row700 string
	for _, l := range lines {
		if strings.HasPrefix(l, "| 500 ") {
			row500 = l
		}
		if strings.HasPrefix(l, "| 700 ") {
			row700 = l
		}
	}
	if !strings.Contains(row500, "0.123 (0.100)") || !strings.Contains(row500, "0.077 ms; 2.00; 1.000") || !strings.Contains(row500, "900 runs/s; 0.456 ms; 13.00; 3.000") {
		t.Errorf("the 500 row lacks the reference's or the floor's figures:\n%s", out.String())
	}
	if !strings.Contains(row700, "not measured at this N") {
		t.Errorf("the 700 row should say the reference was not measured there:\n%s", out.String())
	}
	out.Reset()
	printLeanFloor(&out, []report{{Data: b}})
	if out.Len() != 0 {
		t.Errorf("no lean floor, yet printed:\n%s", out.String())
	}
}

func TestAboveIdle(t *testing.T) {
	// 0.5 cores over 10 s for 1000 runs, 0.1 of them idle: 4 ms a run.
	if got := aboveIdle(0.5, 0.1, 10, 1000); math.Abs(got-4) > 1e-9 {
		t.Errorf("aboveIdle(0.5, 0.1, 10, 1000) = %v, want 4", got)
	}
	if got := aboveIdle(0.05, 0.1, 10, 1000); got != 0 {
		t.Errorf("below idle: %v, want 0", got)
	}
	if got := aboveIdle(0.5, 0.1, 10, 0); got != 0 {
		t.Errorf("no runs: %v, want 0", got)
	}
}

// -leanfloor-history takes counts from 0 to what one transaction seeds,
// and says what it wants otherwise.
func TestHistoriesParse(t *testing.T) {
	if got, err := histories("0, 100,0"); err != nil || len(got) != 3 || got[0] != 0 || got[1] != 100 {
		t.Fatalf("histories(0, 100,0) = %v, %v", got, err)
	}
	for _, bad := range []string{"-1", "121", "x", ""} {
		if _, err := histories(bad); err == nil {
			t.Errorf("histories(%q): no error", bad)
		}
	}
	if _, err := ints("0"); err == nil {
		t.Error("ints(0): no error, want a positive number")
	}
}
