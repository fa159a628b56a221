package config

import (
	"encoding/json"
	"errors"
	"testing"
)

// A run whose input renders no key is refused with a message that names
// the job and the field to add, never text/template's own words.
func TestConcurrencyKeyErrors(t *testing.T) {
	for _, tc := range []struct {
		key, input, want string
	}{
		{`{{ .Input.k }}`, `{"n": 1}`,
			`job "keyed": input has no "k", which concurrency_key "{{ .Input.k }}" needs: add "k" to the input`},
		{`{{ .Input.k }}`, ``,
			`job "keyed": the run has no input, and concurrency_key "{{ .Input.k }}" needs "k": trigger it with an input that has "k"`},
		{`{{ .Input.a.b }}-{{ .Input.c }}`, `{"a": {"x": 1}, "c": 2}`,
			`job "keyed": input has no "a.b", which concurrency_key "{{ .Input.a.b }}-{{ .Input.c }}" needs: add "a.b" to the input`},
		{`{{ .Input.a }}-{{ .Input.c }}`, `{"a": 1}`,
			`job "keyed": input has no "c", which concurrency_key "{{ .Input.a }}-{{ .Input.c }}" needs: add "c" to the input`},
		{`{{ if .Input.a }}{{ .Input.a }}{{ end }}x`, `{}`,
			`job "keyed": input has no "a", which concurrency_key "{{ if .Input.a }}{{ .Input.a }}{{ end }}x" needs: add "a" to the input`},
		{`{{ .Input.k }}`, `{"k": "a/b"}`,
			`job "keyed": concurrency_key "{{ .Input.k }}" renders "a/b", which is not a valid key: use 1 to 128 letters, digits, '.', '_', ':' or '-'`},
		{`{{ .Input.k }}`, `{"k": ""}`,
			`job "keyed": concurrency_key "{{ .Input.k }}" renders "", which is not a valid key: use 1 to 128 letters, digits, '.', '_', ':' or '-'`},
		{`{{ .Input }}`, ``,
			`job "keyed": the run has no input, and concurrency_key "{{ .Input }}" needs one: trigger it with an input`},
		{`{{ .Input.k }`, `{"k": "a"}`,
			`job "keyed": concurrency_key "{{ .Input.k }" is not a valid template: unexpected "}" in operand`},
	} {
		j := &Job{Name: "keyed", ConcurrencyKey: tc.key}
		_, err := j.ConcurrencyKeyFor(json.RawMessage(tc.input))
		var ke *KeyError
		if !errors.Is(err, ErrBadKey) || !errors.As(err, &ke) {
			t.Errorf("%s over %s: %v, want a *KeyError wrapping ErrBadKey", tc.key, tc.input, err)
			continue
		}
		if got := ke.UserMessage(); got != tc.want {
			t.Errorf("%s over %s:\n got %s\nwant %s", tc.key, tc.input, got, tc.want)
		}
	}
	j := &Job{Name: "keyed", ConcurrencyKey: "{{ .Input.k }}"}
	if k, err := j.ConcurrencyKeyFor(json.RawMessage(`{"k": "z"}`)); k != "z" || err != nil {
		t.Errorf(`over {"k": "z"}: %q, %v`, k, err)
	}
}
