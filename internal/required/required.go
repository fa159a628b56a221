// Package required names the dependencies a constructor was not given, so
// its error says which field is missing and what the field is for, in the
// same words for every component.
package required

import "fmt"

// Field is one dependency of a constructor.
type Field struct {
	Missing bool
	Name    string // the field or option, as the caller spells it
	Role    string // what it is for
}

// Check returns an error for each missing field:
// "<component>: <Name> is required: <Role>".
func Check(component string, fields ...Field) []error {
	var errs []error
	for _, f := range fields {
		if f.Missing {
			errs = append(errs, fmt.Errorf("%s: %s is required: %s", component, f.Name, f.Role))
		}
	}
	return errs
}
