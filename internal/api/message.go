package api

import "errors"

// userMessager is an error that carries a sentence for the person who
// asked (which job, run or field, and what to do) besides the wrapped
// chain its Error gives for logs.
type userMessager interface {
	error
	UserMessage() string
}

// userMessage is the text an answer shows for err: the outermost sentence
// meant for people in its chain, or, for an error nobody worded for them,
// its text.
func userMessage(err error) string {
	var m userMessager
	if errors.As(err, &m) {
		return m.UserMessage()
	}
	return err.Error()
}
