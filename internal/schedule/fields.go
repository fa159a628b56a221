package schedule

import (
	"fmt"
	"regexp"
	"strings"

	cron "github.com/netresearch/go-cron"
)

// cronField names a position of a 6-field expression and what go-cron
// needs to parse that field alone.
type cronField struct {
	name     string
	option   cron.ParseOption
	min, max int
	names    bool
}

var cronFields = [6]cronField{
	{"second", cron.Second, 0, 59, false},
	{"minute", cron.Minute, 0, 59, false},
	{"hour", cron.Hour, 0, 23, false},
	{"day-of-month", cron.Dom, 1, 31, false},
	{"month", cron.Month, 1, 12, true},
	{"day-of-week", cron.Dow, 0, 7, true},
}

var (
	reOutOfRange = regexp.MustCompile(`(above maximum|below minimum)`)
	reNotNumber  = regexp.MustCompile(`^failed to parse int from ("[^"]*")`)
	reQuotedTail = regexp.MustCompile(`: "[^"]*"$`)
)

// fieldError turns a go-cron error about the whole expression into one that
// names the field at fault, by parsing each field alone. go-cron's own
// messages name neither the field nor, for a bad number, the value in terms a
// user wrote.
func fieldError(fields []string, err error) error {
	first := 0
	if len(fields) == 5 {
		first = 1
	}
	for i, expr := range fields {
		f := cronFields[first+i]
		p, perr := cron.TryNewParser(f.option)
		if perr != nil {
			return fmt.Errorf("cron parser: %w", perr)
		}
		if _, ferr := p.Parse(expr); ferr != nil {
			return fmt.Errorf("%s %q: %s", f.name, expr, reason(f, ferr))
		}
	}
	return fmt.Errorf("invalid cron expression: %w", err)
}

func reason(f cronField, err error) string {
	msg := err.Error()
	switch {
	case reOutOfRange.MatchString(msg):
		return fmt.Sprintf("out of range %d-%d", f.min, f.max)
	case strings.Contains(msg, "requires"):
		// go-cron's optional syntaxes (H, L, W, #) that we leave off so
		// expressions stay portable to other cron implementations.
		return "extended syntax (H, L, W, #) is not supported"
	case strings.HasPrefix(msg, "step of range must be a positive number"):
		return "step must be positive"
	}
	if m := reNotNumber.FindStringSubmatch(msg); m != nil {
		if f.names {
			return m[1] + " is not a number or name"
		}
		return m[1] + " is not a number"
	}
	return reQuotedTail.ReplaceAllString(msg, "")
}
