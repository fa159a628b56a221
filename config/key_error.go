package config

import (
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// KeyError is a run's input that renders no valid concurrency key. Its
// text is for the user who sent the input: it names the job, the field the
// input lacks or the key it made, and what to do.
type KeyError struct {
	Job      string // the job's name
	Template string // its concurrency_key
	// Exactly one of these says what went wrong.
	Missing  string // the input field, e.g. "k" or "customer.id", that the template needs and the input lacks
	NoInput  bool   // the run has no input at all (Missing: the field it needs first)
	Rendered string // a rendered key outside KeyPattern
	Problem  string // anything else, after `concurrency_key "..." `
	// Err is text/template's or encoding/json's error, for logs and code.
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("job %q: %s", e.Job, e.Reason()) }

// UserMessage is the text an API answer shows.
func (e *KeyError) UserMessage() string { return e.Error() }

// Reason is the message without the job's name, for where the job is
// named already (a config file's jobs[i] "name").
func (e *KeyError) Reason() string {
	switch {
	case e.NoInput && e.Missing == "":
		return fmt.Sprintf("the run has no input, and concurrency_key %q needs one: trigger it with an input", e.Template)
	case e.NoInput:
		return fmt.Sprintf("the run has no input, and concurrency_key %q needs %q: trigger it with an input that has %q", e.Template, e.Missing, e.Missing)
	case e.Missing != "":
		return fmt.Sprintf("input has no %q, which concurrency_key %q needs: add %q to the input", e.Missing, e.Template, e.Missing)
	case e.Rendered != "" || e.Problem == "":
		return fmt.Sprintf("concurrency_key %q renders %q, which is not a valid key: use 1 to 128 letters, digits, '.', '_', ':' or '-'", e.Template, e.Rendered)
	default:
		return fmt.Sprintf("concurrency_key %q %s", e.Template, e.Problem)
	}
}

func (e *KeyError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBadKey}
	}
	return []error{ErrBadKey, e.Err}
}

// missingField finds the first .Input.a.b the template uses that input
// does not have, so that a failed render can say which field to add
// instead of quoting text/template. noInput: input is empty.
func missingField(t *template.Template, input any) (field string, noInput bool) {
	for _, chain := range inputFields(t.Root) {
		cur := input
		for i, name := range chain {
			m, ok := cur.(map[string]any)
			if !ok {
				if i == 0 && cur == nil {
					return strings.Join(chain, "."), true
				}
				break // a field of a string or list: not a missing key
			}
			if cur, ok = m[name]; !ok {
				return strings.Join(chain[:i+1], "."), false
			}
		}
	}
	return "", false
}

// inputFields lists the field chains below .Input (".Input.a.b" is
// [a b]) where dot is the template's data, in the order they appear.
func inputFields(n parse.Node) [][]string {
	var out [][]string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			if len(n.Ident) > 1 && n.Ident[0] == "Input" {
				out = append(out, n.Ident[1:])
			}
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe) // inside, dot is another value
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.ElseList)
		}
	}
	walk(n)
	return out
}
