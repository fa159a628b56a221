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
// By default a table shows its main columns and shortens the elastic ones
// so a row fits the terminal, or 100 columns on a pipe; with -o wide it
// shows every column and cuts nothing, so grep sees every character.
type table struct {
	header   []string
	rows     [][]string
	elastic  map[int]bool // columns that may be shortened, by index
	wideOnly map[int]bool // columns shown only with -o wide
	giveWay  map[int]bool // columns shown by default only while the rows fit
	view     view
}

// view is how a table is laid out: the width to fit (0: do not cut) and
// whether every column shows (-o wide).
type view struct {
	width int
	wide  bool
}

// defaultWidth is what a table fits when stdout is not a terminal: a
// pipe into less or a CI log is read by a person too.
const defaultWidth = 100

// viewOf lays out tables for w: wide shows every column uncut; otherwise
// fit the terminal's width, or defaultWidth when w is not a terminal.
func viewOf(w io.Writer, wide bool) view {
	if wide {
		return view{wide: true}
	}
	if width := terminalWidth(w); width > 0 {
		return view{width: width}
	}
	return view{width: defaultWidth}
}

const colGap = 2

func newTable(v view, header ...string) *table {
	return &table{header: header, view: v, elastic: map[int]bool{}, wideOnly: map[int]bool{}, giveWay: map[int]bool{}}
}

// optional marks the columns shown by default only while the rows fit the
// width with their elastic columns cut as far as they go: a column that
// says the same on every row (a job's team in its runs) gives way to the
// ids and times, which are never cut; -o wide shows it always.
func (t *table) optional(cols ...int) *table {
	for _, c := range cols {
		t.giveWay[c] = true
	}
	return t
}

// wide marks the columns shown only with -o wide.
func (t *table) wide(cols ...int) *table {
	for _, c := range cols {
		t.wideOnly[c] = true
	}
	return t
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
	t.narrow()
	t.yield()
	t.fit()
	tw := tabwriter.NewWriter(w, 0, 0, colGap, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// narrow drops the wide-only columns unless the view is wide.
func (t *table) narrow() {
	if t.view.wide || len(t.wideOnly) == 0 {
		return
	}
	t.drop(t.wideOnly)
	t.wideOnly = map[int]bool{}
}

// yield drops the optional columns, rightmost first, while the rows
// cannot fit the width even with every elastic column cut to its least.
func (t *table) yield() {
	if t.view.wide || t.view.width <= 0 {
		return
	}
	for len(t.giveWay) > 0 && t.least() > t.view.width {
		last := -1
		for c := range t.giveWay {
			last = max(last, c)
		}
		t.drop(map[int]bool{last: true})
	}
}

// drop removes the columns cols, keeping the marks of those that stay.
func (t *table) drop(cols map[int]bool) {
	keep := func(cells []string) []string {
		out := make([]string, 0, len(cells))
		for i, c := range cells {
			if !cols[i] {
				out = append(out, c)
			}
		}
		return out
	}
	marks := []map[int]bool{t.elastic, t.wideOnly, t.giveWay}
	moved := []map[int]bool{{}, {}, {}}
	for i, n := 0, 0; i < len(t.header); i++ {
		if cols[i] {
			continue
		}
		for k := range marks {
			if marks[k][i] {
				moved[k][n] = true
			}
		}
		n++
	}
	t.header = keep(t.header)
	for i, r := range t.rows {
		t.rows[i] = keep(r)
	}
	t.elastic, t.wideOnly, t.giveWay = moved[0], moved[1], moved[2]
}

// least is the width of the rows with every elastic column cut as far as
// fit cuts it.
func (t *table) least() int {
	total := 0
	for i, h := range t.header {
		w := utf8.RuneCountInString(h)
		for _, r := range t.rows {
			if i < len(r) {
				w = max(w, utf8.RuneCountInString(r[i]))
			}
		}
		if t.elastic[i] {
			w = min(w, max(len(h), minElastic))
		}
		total += w + colGap
	}
	return total - colGap
}

// fit cuts the widest elastic column, one character at a time, until the
// rows fit the width or no elastic column is longer than its header.
func (t *table) fit() {
	if t.view.width <= 0 || len(t.elastic) == 0 {
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
	for total := measure(); total > t.view.width; {
		widest := -1
		for c := range t.elastic {
			if c < len(widths) && widths[c] > max(len(t.header[c]), minElastic) && (widest < 0 || widths[c] > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			return
		}
		target := widths[widest] - (total - t.view.width)
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
