package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// table is output for people: a header and rows, aligned by tabwriter.
// When width is set (stdout is a terminal that wide), the elastic columns
// are shortened so a row fits on one line; otherwise nothing is cut, so a
// pipe into grep sees every character.
type table struct {
	header  []string
	rows    [][]string
	elastic map[int]bool // columns that may be shortened, by index
	width   int
}

const colGap = 2

func newTable(width int, header ...string) *table {
	return &table{header: header, width: width, elastic: map[int]bool{}}
}

// shrink marks the columns that may be cut to fit the terminal: free text
// such as errors and inputs, never ids.
func (t *table) shrink(cols ...int) *table {
	for _, c := range cols {
		t.elastic[c] = true
	}
	return t
}

func (t *table) add(cells ...string) {
	for i, c := range cells {
		// One row is one line, whatever an error message holds.
		cells[i] = strings.Join(strings.Fields(c), " ")
		if cells[i] == "" {
			cells[i] = "-"
		}
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(w io.Writer) error {
	t.fit()
	tw := tabwriter.NewWriter(w, 0, 0, colGap, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fit cuts the widest elastic column, one character at a time, until the
// rows fit the width or no elastic column is longer than its header.
func (t *table) fit() {
	if t.width <= 0 || len(t.elastic) == 0 {
		return
	}
	widths := make([]int, len(t.header))
	measure := func() int {
		total := 0
		for i := range widths {
			widths[i] = utf8.RuneCountInString(t.header[i])
			for _, r := range t.rows {
				if i < len(r) {
					widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
				}
			}
			total += widths[i] + colGap
		}
		return total - colGap
	}
	for total := measure(); total > t.width; {
		widest := -1
		for c := range t.elastic {
			if c < len(widths) && widths[c] > max(len(t.header[c]), minElastic) && (widest < 0 || widths[c] > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			return
		}
		target := widths[widest] - (total - t.width)
		target = max(target, len(t.header[widest]), minElastic)
		for _, r := range t.rows {
			if widest < len(r) {
				r[widest] = cut(r[widest], target)
			}
		}
		total = measure()
	}
}

// minElastic is how narrow a cut column may become: less says nothing.
const minElastic = 12

// cut shortens s to n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// terminalWidth is the width of w when it is a terminal, else 0 (no limit).
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// writeRaw prints answers of the API as they came, indented, one JSON
// value: a list when the API answered a list.
func writeRaw(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// stamp is a time for a table: UTC to the second, "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// took is how long a run took, to the millisecond.
func took(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return "-"
	}
	return to.Sub(from).Round(time.Millisecond).String()
}
