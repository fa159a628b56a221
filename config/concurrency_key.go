package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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
// an error wrapping ErrBadKey when the template fails or renders a key
// outside KeyPattern.
func (j *Job) ConcurrencyKeyFor(input json.RawMessage) (string, error) {
	if j.ConcurrencyKey == "" {
		return "", nil
	}
	t, err := parseKey(j.ConcurrencyKey)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	var data struct{ Input any }
	if len(input) > 0 {
		if err := json.Unmarshal(input, &data.Input); err != nil {
			return "", fmt.Errorf("%w: input: %w", ErrBadKey, err)
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if !reKey.Match(b.Bytes()) {
		return "", fmt.Errorf("%w: %q does not match %s", ErrBadKey, b.String(), KeyPattern)
	}
	return b.String(), nil
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
