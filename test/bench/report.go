package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// row is one line of the figures table: a figure beside its reference from
// the same run. Goals and verdicts are in the goals table (goals.go).
type row struct {
	Scenario  string `json:"scenario"`
	Figure    string `json:"figure"`
	Value     string `json:"value"`
	Reference string `json:"reference"`
}

// report is what a scenario hands back: its JSON object and its rows.
type report struct {
	Scenario string
	Data     any
	Rows     []row
}

// resultOf is the data of the last report whose result is a T, or nil.
func resultOf[T any](reports []report) *T {
	var found *T
	for _, r := range reports {
		if d, ok := r.Data.(T); ok {
			found = &d
		}
	}
	return found
}

// printJSON writes one JSON object per line: {"scenario": ..., ...data}.
func printJSON(w io.Writer, r report) error {
	data, err := json.Marshal(r.Data)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	m["scenario"] = r.Scenario
	if len(r.Rows) > 0 {
		m["rows"] = r.Rows
	}
	out, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(out))
	return err
}

// printTable writes every row as an aligned table (markdown-compatible).
func printTable(w io.Writer, reports []report) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| scenario\t figure\t value\t reference (same run)\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t")
	for _, r := range reports {
		for _, x := range r.Rows {
			fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t\n", x.Scenario, x.Figure, x.Value, x.Reference)
		}
	}
	_ = tw.Flush()
}

// dist summarizes durations in milliseconds.
type dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func distOf(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return dist{N: len(s), P50: q(0.50), P99: q(0.99), Max: ms(s[len(s)-1])}
}

func (d dist) String() string {
	if d.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.2f / p99 %.2f / max %.1f ms (n=%d)", d.P50, d.P99, d.Max, d.N)
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// The verdicts of a goal row.
const (
	verdictMet         = "met"
	verdictNotMet      = "not met"
	verdictNotMeasured = "not measured"
)

func verdict(ok bool) string {
	if ok {
		return verdictMet
	}
	return verdictNotMet
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// busyHost is the share of a core the rest of the machine may take during
// a step before the step's row says the host was busy: its figures then
// measure the host as much as the scheduler.
const busyHost = 0.25

// hostNote names what the rest of the machine took during a step.
func hostNote(cpu map[string]float64) string {
	other := cpu["other"]
	note := fmt.Sprintf("rest of the host %.2f", other)
	if other >= busyHost {
		note += " (busy host)"
	}
	return note
}
