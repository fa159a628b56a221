package main

import (
	"fmt"
	"strings"
	"time"
)

// A step's lateness second by second, printed for every step: its totals
// do not tell apart every second a little late (the host short of CPU for
// the load) from some seconds late as a whole and the rest on time (a
// stall before an instant's runs start: a pause, a burst of other work, a
// spiral that sheds). A step that holds can have the latter too: a p99
// far above its p50.

// secondFigures are the ticks of one due second: how many were due and
// delivered, and the delivered ones' lateness.
type secondFigures struct {
	At        time.Time `json:"at"`
	Due       int       `json:"due"`
	Delivered int       `json:"delivered"`
	Lateness  dist      `json:"lateness"`
}

// timeline is the figures of each due second of [from, to), for jobs
// ticks due each second, from the first arrivals of the delivered ticks.
// bySecond holds the lateness of each due second's delivered ticks by the
// second's Unix time.
func timeline(bySecond map[int64][]time.Duration, jobs int, from, to time.Time) []secondFigures {
	var out []secondFigures
	for _, s := range dueSeconds(from, to) {
		late := bySecond[s.Unix()]
		out = append(out, secondFigures{At: s, Due: jobs, Delivered: len(late), Lateness: distOf(late)})
	}
	return out
}

// timelineNote is the timeline in one line: each second's delivered share
// and p50/p99 lateness in ms, in order ("" when there is none).
func timelineNote(secs []secondFigures) string {
	if len(secs) == 0 {
		return ""
	}
	parts := make([]string, len(secs))
	for i, s := range secs {
		parts[i] = fmt.Sprintf("%s %s %.0f/%.0f", s.At.UTC().Format("05"), pct(float64(s.Delivered)/float64(max(1, s.Due))), s.Lateness.P50, s.Lateness.P99)
	}
	return "by due second (s delivered p50/p99 ms): " + strings.Join(parts, ", ")
}

// logBurstSide prints the side's summary and its timeline.
func logBurstSide(s burstSide) {
	logf("burst: %s", s.describe())
	if s.Due > 0 {
		held := "held"
		if !s.held() {
			held = "not held"
		}
		logf("burst: %s %d jobs, %s: %s", s.Engine, s.Jobs, held, timelineNote(s.PerSecond))
	}
}
