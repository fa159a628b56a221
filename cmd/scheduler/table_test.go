package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// On a terminal, the elastic column is cut so each line fits; on a pipe
// (width 0) nothing is cut; ids are never cut, even when they alone are
// wider than the terminal.
func TestTableFitsWidth(t *testing.T) {
	build := func(width int) string {
		tb := newTable(width, "RUN ID", "OUTCOME", "ERROR").shrink(2)
		tb.add("nightly@2026-03-29T01:30:00Z", "failed", "exit status 3: "+strings.Repeat("x", 100)+"\nsecond line")
		tb.add("nightly@2026-03-30T01:30:00Z", "succeeded", "")
		var b bytes.Buffer
		if err := tb.write(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	wide := build(0)
	if !strings.Contains(wide, strings.Repeat("x", 100)+" second line") || strings.Count(wide, "\n") != 3 {
		t.Errorf("no width: want every character, one line a row:\n%s", wide)
	}
	for _, line := range strings.Split(strings.TrimSpace(build(80)), "\n") {
		if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > 80 {
			t.Errorf("line of %d characters on an 80-column terminal: %q", n, line)
		}
	}
	narrow := build(20)
	if !strings.Contains(narrow, "nightly@2026-03-29T01:30:00Z") || !strings.Contains(narrow, "exit status…") {
		t.Errorf("20 columns: ids whole, the error cut to %d:\n%s", minElastic, narrow)
	}
}
