package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// fieldNames are the names go-cron accepts for months and weekdays, lower
// case as parseCron leaves them.
var fieldNames = map[string]map[string]int{
	"month": {
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	},
	"day-of-week": {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6},
}

// checkRanges refuses a range whose start is after its end ("10-0",
// "fri-mon"). go-cron reads it as wrapping around, robfig/cron and so
// Kubernetes refuse it, and it is almost always a typo for the other
// order: a schedule that runs elsewhere too must mean the same here. It
// runs after go-cron accepted the fields, so every part is well formed.
func checkRanges(fields []string) error {
	first := 0
	if len(fields) == 5 {
		first = 1
	}
	for i, expr := range fields {
		f := cronFields[first+i]
		for part := range strings.SplitSeq(expr, ",") {
			rng, _, _ := strings.Cut(part, "/")
			lo, hi, ok := strings.Cut(rng, "-")
			if !ok {
				continue
			}
			a, aok := fieldValue(f, lo)
			b, bok := fieldValue(f, hi)
			if !aok || !bok || a <= b {
				continue
			}
			top := f.max
			if f.name == "day-of-week" {
				top = 6 // 7 is Sunday again
			}
			return fmt.Errorf("%s %q: range %s-%s runs backwards: ranges do not wrap around, write %q",
				f.name, expr, lo, hi, wrapped(a, top, f.min, b))
		}
	}
	return nil
}

// fieldValue reads one end of a range: a number or, for months and
// weekdays, a name.
func fieldValue(f cronField, s string) (int, bool) {
	if n, ok := fieldNames[f.name][s]; ok {
		return n, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// wrapped spells the two ranges a backwards one was probably meant as.
func wrapped(start, top, bottom, end int) string {
	head := strconv.Itoa(start)
	if start < top {
		head += "-" + strconv.Itoa(top)
	}
	tail := strconv.Itoa(bottom)
	if end > bottom {
		tail += "-" + strconv.Itoa(end)
	}
	return head + "," + tail
}
