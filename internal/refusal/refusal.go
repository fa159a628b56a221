// Package refusal is an error that refuses a request in words for the
// person who made it: Error keeps a sentinel's prefix, for logs;
// UserMessage is the sentence an answer shows (internal/api); errors.Is
// finds the sentinel.
package refusal

import "fmt"

type refusal struct {
	kind error
	msg  string
}

// New refuses with kind (a sentinel error) and a sentence that names what
// was asked and says what to do.
func New(kind error, format string, args ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (r *refusal) Error() string       { return r.kind.Error() + ": " + r.msg }
func (r *refusal) UserMessage() string { return r.msg }
func (r *refusal) Unwrap() error       { return r.kind }
