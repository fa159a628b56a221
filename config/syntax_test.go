package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
)

// brokenAfterComments is a valid job, n long comment lines, then a second
// job whose key is indented one space short: the case that took 7s at
// 1,000 lines and 25s at 5,000 when every cut of the file was parsed.
func brokenAfterComments(n int) []byte {
	var b bytes.Buffer
	b.WriteString("jobs:\n  - name: a\n    schedule: \"@daily\"\n    exec: {command: [date]}\n")
	for range n {
		b.WriteString("# " + strings.Repeat("comment ", 25) + "\n")
	}
	b.WriteString("  - name: b\n   schedule: \"@daily\"\n")
	return b.Bytes()
}

// BenchmarkSyntaxError also runs 5,000 lines; yaml.v3 alone takes seconds
// on that under the race detector.
func TestSyntaxErrorAfterManyLines(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		_, err := Parse("big.yaml", brokenAfterComments(n))
		want := fmt.Sprintf("big.yaml:%d:4: did not find expected '-' indicator (check the indentation)", 4+n+2)
		if err == nil || err.Error() != want {
			t.Errorf("%d comment lines: got %v, want %s", n, err, want)
		}
	}
}

// Locating the error is linear in the file: ten times the comment lines
// cost about ten times the bytes allocated, where parsing every cut of the
// file in turn (the search errorLine replaced) costs about a hundred times.
// Bytes allocated are counted rather than time measured: they do not
// depend on the machine's load, and every parse allocates in proportion
// to what it reads.
func TestSyntaxErrorLinearInLines(t *testing.T) {
	cost := func(n int) uint64 {
		data := brokenAfterComments(n)
		least := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Parse("big.yaml", data)
			runtime.ReadMemStats(&after)
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("%d comment lines: %v, want a syntax error", n, err)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		return least
	}
	small, large := cost(100), cost(1000)
	if ratio := float64(large) / float64(small); ratio > 20 {
		t.Errorf("100 comment lines allocate %d bytes, 1,000 allocate %d: %.0f times as much, want about 10", small, large, ratio)
	}
}

// An unclosed quote is only noticed at the end of the stream; the line is
// still the one where the quote opened.
func TestSyntaxErrorUnclosedQuote(t *testing.T) {
	src := "jobs:\n  - name: a\n    schedule: \"@daily\n" + strings.Repeat("# comment\n", 3000)
	_, err := Parse("q.yaml", []byte(src))
	if want := "q.yaml:3:5: found unexpected end of stream"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// errorLine gives the answer of the plain search it replaces, parsing
// every cut of the file in turn, on every broken file of testdata and on
// variations of each with lines in front and behind.
func TestErrorLineMatchesFullSearch(t *testing.T) {
	files := []string{"flow", "indent", "quote", "tabs"}
	for _, f := range files {
		data := readFile(t, "testdata/"+f+".bad.yaml")
		for _, v := range [][]byte{
			data,
			append([]byte("# head\n\n"), data...),
			append(bytes.Clone(data), "\n# tail\nworker: {max_parallel: 2}\n"...),
		} {
			_, err := parseYAML(v)
			if err == nil {
				t.Fatalf("%s: parses", f)
			}
			msg := reYAMLLine.FindStringSubmatch(err.Error())[2]
			lines := bytes.SplitAfter(v, []byte("\n"))
			if got, want := errorLine(v, lines, msg), firstFailingCut(v, lines, msg); got != want {
				t.Errorf("%s: errorLine = %d, every cut in turn = %d\n%s", f, got, want, v)
			}
		}
	}
}

func firstFailingCut(data []byte, lines [][]byte, msg string) int {
	end := 0
	for i, l := range lines {
		end += len(l)
		if _, err := parseYAML(data[:end]); err != nil {
			if m := reYAMLLine.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
				return i + 1
			}
		}
	}
	return len(lines)
}

// BenchmarkSyntaxError: reporting the error should cost a few parses of
// the file, whatever its length. The yaml-only runs are one bare parse of
// the same file, the unit to compare with: yaml.v3 itself is slower than
// linear on a long run of comment lines.
func BenchmarkSyntaxError(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		data := brokenAfterComments(n)
		b.Run(fmt.Sprintf("yaml-only/lines=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = parseYAML(data)
			}
		})
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				_, err := Parse("big.yaml", data)
				var cerr *Error
				if !errors.As(err, &cerr) {
					b.Fatal(err)
				}
			}
		})
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
