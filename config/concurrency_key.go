package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"text/template"
)

// KeyPattern is the syntax of a rendered concurrency key: it becomes part
// of a slot's etcd key (slots/<job>/<key>/<i>), so no "/".
const KeyPattern = `[A-Za-z0-9._:-]{1,128}`

var reKey = regexp.MustCompile(`^` + KeyPattern + `$`)

// ErrBadKey: a run's input renders no valid concurrency key.
var ErrBadKey = errors.New("config: bad concurrency key")

// keyTemplates caches parsed concurrency_key templates by their text: a
// Job travels as JSON inside queue entries and keeps no parsed state.
var keyTemplates sync.Map // text -> *template.Template

func parseKey(text string) (*template.Template, error) {
	if t, ok := keyTemplates.Load(text); ok {
		return t.(*template.Template), nil
	}
	// A key the input does not have is an error, not "<no value>": two
	// runs without a customer id must not share that key by accident.
	t, err := template.New("concurrency_key").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	keyTemplates.Store(text, t)
	return t, nil
}

// ConcurrencyKeyFor renders the job's concurrency key over input (a JSON
// document; empty means none): "" when the job has no concurrency_key;
// a *KeyError (which wraps ErrBadKey) when the template fails or renders
// a key outside KeyPattern.
func (j *Job) ConcurrencyKeyFor(input json.RawMessage) (string, error) {
	if j.ConcurrencyKey == "" {
		return "", nil
	}
	fail := &KeyError{Job: j.Name, Template: j.ConcurrencyKey}
	t, err := parseKey(j.ConcurrencyKey)
	if err != nil {
		fail.Err, fail.Problem = err, "is not a valid template: "+templateReason(err)
		return "", fail
	}
	var data struct{ Input any }
	if len(input) > 0 {
		if err := json.Unmarshal(input, &data.Input); err != nil {
			fail.Err, fail.Problem = err, "cannot be rendered: the input is not JSON"
			return "", fail
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		fail.Err = err
		fail.Missing, fail.NoInput = missingField(t, data.Input)
		if fail.Missing == "" {
			fail.Problem = "cannot be rendered from this input: " + templateReason(err)
		}
		return "", fail
	}
	if !reKey.Match(b.Bytes()) {
		fail.Rendered = b.String()
		// {{ .Input }} over no input renders text/template's "<no value>".
		fail.NoInput = data.Input == nil && strings.Contains(fail.Rendered, "<no value>")
		return "", fail
	}
	return b.String(), nil
}

// templateReason is the last part of a text/template error, the part that
// says what went wrong, without the template's name and position.
func templateReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// DefaultInput is the job's input as JSON, or nil when it has none.
func (j *Job) DefaultInput() json.RawMessage {
	if len(j.Input) == 0 {
		return nil
	}
	b, err := json.Marshal(j.Input)
	if err != nil {
		return nil // YAML scalars, lists and mappings always encode
	}
	return b
}
