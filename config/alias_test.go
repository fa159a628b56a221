package config

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// mergeBomb is the file of the report: an anchor merged fan times into
// the next, levels deep, and the last merged into a job. It is a few
// hundred bytes and asks for fan^levels mappings.
func mergeBomb(levels, fan int) []byte {
	var b strings.Builder
	b.WriteString("x-l0: &l0 {a: 1}\n")
	for l := 1; l <= levels; l++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", l-1), fan), ", ")
		fmt.Fprintf(&b, "x-l%d: &l%d {<<: [%s]}\n", l, l, refs)
	}
	fmt.Fprintf(&b, "jobs:\n  - <<: *l%d\n", levels)
	return []byte(b.String())
}

func TestMergeBombRefused(t *testing.T) {
	data := mergeBomb(6, 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse("bomb.yaml", data)
	runtime.ReadMemStats(&after)

	want := "bomb.yaml:9:9: jobs[0]: alias *l6 expands to more than 1000000 nodes: aliases and merge keys may expand to 10 times the file's own nodes (at least 1000000)"
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	// One line, not one per merged copy (a million before).
	if lines := strings.Count(err.Error(), "\n") + 1; lines != 1 {
		t.Errorf("%d lines printed", lines)
	}
	// Before: 448 MB. The budget allows 1,000,000 nodes, some 16 MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("refusing the bomb allocated %d MB", alloc>>20)
	}
}

// An anchor that contains an alias to itself parses into a cycle, which a
// decoder following aliases would follow forever.
func TestAliasCycleRefused(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		// Stopped by the types before the cycle matters.
		{"jobs: &a [*a]\n", `cycle.yaml:1:7: jobs[0]: expected a mapping, got a list`},
		{"jobs:\n  - &j\n    name: a\n    <<: *j\n", `cycle.yaml:4:9: jobs[0]: alias *j refers to a value that contains it`},
		{"x-m: &m {<<: *m}\njobs: [{<<: *m}]\n", `cycle.yaml:1:14: jobs[0]: alias *m refers to a value that contains it`},
		{"x-m: &m {exec: {env: {A: *m}}}\njobs: [{<<: *m}]\n", `cycle.yaml:1:26: jobs[0].exec.env["A"]: alias *m refers to a value that contains it`},
	} {
		_, err := Parse("cycle.yaml", []byte(tt.src))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q:\n got %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

// Sharing settings the documented way stays well inside the budget, even
// a large anchor merged into many small jobs.
func TestSharedAnchorWithinBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-env: &env\n  exec:\n    command: [date]\n    env:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "      V%d: x\n", i)
	}
	b.WriteString("jobs:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  - {<<: *env, name: j%d, schedule: \"@daily\"}\n", i)
	}
	cfg, err := Parse("shared.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("%.500v", err)
	}
	if len(cfg.Jobs) != 1000 || len(cfg.Jobs[999].Exec.Env) != 50 {
		t.Errorf("%d jobs, last has %d env", len(cfg.Jobs), len(cfg.Jobs[999].Exec.Env))
	}
}

// A file with more problems than MaxPrinted prints the first ones in file
// order and counts the rest; Problems keeps them all.
func TestPrintedProblemsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("jobs:\n")
	for i := range 150 {
		fmt.Fprintf(&b, "  - {name: j%d, schedule: \"61 * * * *\", exec: {command: [date]}}\n", i)
	}
	_, err := Parse("many.yaml", []byte(b.String()))
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("got %v", err)
	}
	if len(cerr.Problems) != 150 {
		t.Errorf("%d problems kept, want 150", len(cerr.Problems))
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxPrinted+1 {
		t.Fatalf("%d lines printed, want %d", len(lines), MaxPrinted+1)
	}
	if want := `many.yaml:2:26: jobs[0] "j0": schedule: minute "61": out of range 0-59`; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "and 50 more errors"; lines[MaxPrinted] != want {
		t.Errorf("last line %q, want %q", lines[MaxPrinted], want)
	}
}

// Merging one anchor twice into a mapping reports its mistake once.
func TestRepeatedMergeReportedOnce(t *testing.T) {
	src := "x-a: &a {timeout: 10}\njobs:\n  - {<<: [*a, *a, *a], name: j, schedule: \"@daily\", exec: {command: [date]}}\n"
	_, err := Parse("rep.yaml", []byte(src))
	want := `rep.yaml:1:19: jobs[0] "j": timeout: invalid duration "10": want e.g. "30s", "5m" or "1h30m"`
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// BenchmarkMergeBomb: refusing the bomb costs what the budget allows, not
// what the bomb asks for (before: 3.9s and 448 MB).
func BenchmarkMergeBomb(b *testing.B) {
	data := mergeBomb(6, 10)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bomb.yaml", data); err == nil {
			b.Fatal("bomb accepted")
		}
	}
}
