package required

import (
	"fmt"
	"time"
)

// Duration is one duration setting of a constructor, as the caller
// spelled it.
type Duration struct {
	Name  string
	Value time.Duration
}

// NotNegative returns an error for each negative duration:
// "<component>: <Name> must not be negative, got <Value>". Zero is left to
// the component, which reads it as "take the default".
func NotNegative(component string, ds ...Duration) []error {
	var errs []error
	for _, d := range ds {
		if d.Value < 0 {
			errs = append(errs, fmt.Errorf("%s: %s must not be negative, got %v", component, d.Name, d.Value))
		}
	}
	return errs
}

// Or sets *p to def when *p is its zero value (a nil clock or logger, a
// zero duration): the one spelling of "left zero, takes the default".
func Or[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
