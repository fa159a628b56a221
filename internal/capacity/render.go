package capacity

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// width is the widest line Render writes.
const width = 100

// listed is how many job names a line names before "and N more".
const listed = 5

// Render writes the report for people, within 100 columns.
func Render(w io.Writer, r Report) {
	fmt.Fprintf(w, "capacity over the %s from %s:\n", r.Window, r.From.Format(time.RFC3339))
	fmt.Fprintf(w, "  runs due: %d, a mean of %.2f a second\n", r.Runs, r.Mean)
	if r.Peak.Runs == 0 {
		fmt.Fprintln(w, "  peak: no run is due in the window")
	} else {
		wrap(w, fmt.Sprintf("peak: %d runs due in the second %s, of %s", r.Peak.Runs,
			r.Peak.At.Format(time.RFC3339), names(r.Peak.Jobs, "job", "jobs")))
		fmt.Fprintf(w, "  slot and lease-bound keys the peak's runs take: %d\n", r.Peak.Keys)
	}
	wrap(w, fmt.Sprintf("history at steady state: %d keys, about %s (history_limit and skipped_history_limit "+
		"of each job and shard, and each job's cursor and spec)", r.HistoryKeys, size(r.HistoryBytes)))
	if len(r.Spread) > 0 {
		spread := Spread(r)
		wrap(w, fmt.Sprintf("hint: jitter: %ds on the jobs due at the peak without one would spread their "+
			"runs over %d seconds (about %d a second); %s", spread, spread,
			int(math.Ceil(float64(r.Peak.Runs)/float64(spread))), names(r.Spread, "job", "jobs")))
	}
	if len(r.Truncated) > 0 {
		wrap(w, fmt.Sprintf("note: counted the first %d ticks of %s", maxTicks, names(r.Truncated, "job", "jobs")))
	}
}

// Spread is the jitter, in seconds, the hint suggests: 30s, or as many
// seconds as it takes to bring the peak near 100 runs a second, at most a
// minute.
func Spread(r Report) int {
	return min(max(30, int(math.Ceil(float64(r.Peak.Runs)/100))), 60)
}

// names is "1 job: a" or "7 jobs: a, b, c, d, e and 2 more".
func names(list []string, one, many string) string {
	head := list[:min(len(list), listed)]
	s := fmt.Sprintf("%d %s: %s", len(list), many, strings.Join(head, ", "))
	if len(list) == 1 {
		s = fmt.Sprintf("1 %s: %s", one, list[0])
	}
	if len(list) > listed {
		s += fmt.Sprintf(" and %d more", len(list)-listed)
	}
	return s
}

// size writes bytes in binary units.
func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", b)
}

// wrap writes text as an item of the report: the first line indented by
// two, the others by four, none past width.
func wrap(w io.Writer, text string) {
	line := " "
	for _, word := range strings.Fields(text) {
		if len(line) > 4 && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			fmt.Fprintln(w, line)
			line = "   "
		}
		line += " " + word
	}
	fmt.Fprintln(w, line)
}
