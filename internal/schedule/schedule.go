// Package schedule turns the schedule field of a job into the times it fires.
//
// A Schedule is a pure function of time: every replica that becomes leader
// computes the same ticks from the same spec, so a tick is identified by its
// time alone (the run id is <job>@<tick>) and a new leader neither repeats nor
// invents one. Cron expressions are parsed by github.com/netresearch/go-cron;
// this package adds the parts a cluster needs on top of it: "@every"
// aligned to the Unix epoch, one well-defined answer on daylight-saving days,
// deterministic jitter and error messages that read well in a config report.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Schedule yields the ticks of a job.
type Schedule interface {
	// Next returns the first tick strictly after t, or the zero time if
	// there is none.
	Next(t time.Time) time.Time
}

// macros are the usual shorthands, spelled out so that the DST rules of
// cronSchedule see the same fields a user would have written.
var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads spec, evaluating cron fields as wall-clock time in loc (nil
// means UTC). It accepts 5-field cron, 6-field cron with a leading seconds
// field, the macros @yearly, @annually, @monthly, @weekly, @daily,
// @midnight, @hourly, and "@every D".
func Parse(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("empty schedule")
	}
	// The time zone is a field of its own: a second place to set it would
	// only let the two disagree.
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(spec, prefix) {
			tz, _, _ := strings.Cut(spec, " ")
			return nil, fmt.Errorf("%q prefix is not allowed: set the timezone field instead", tz)
		}
	}
	if !strings.HasPrefix(spec, "@") {
		return parseCron(spec, loc)
	}
	fields := strings.Fields(spec)
	if spec == Manually {
		return manually{}, nil
	}
	if fields[0] == "@every" {
		if len(fields) != 2 {
			return nil, errors.New(`@every takes one duration, e.g. "@every 30s"`)
		}
		return parseEvery(fields[1])
	}
	if expr, ok := macros[fields[0]]; ok && len(fields) == 1 {
		return parseCron(expr, loc)
	}
	return nil, fmt.Errorf("unknown macro %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @manually or @every <duration>)", spec)
}
