package jsonerr

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestDescribe(t *testing.T) {
	type body struct {
		Input json.RawMessage `json:"input"`
		Key   string          `json:"idempotency_key"`
		Limit int             `json:"limit"`
	}
	for _, tc := range []struct{ doc, want string }{
		{`not json`, "is not valid JSON: it stops making sense at character 2"},
		{`{not json}`, "is not valid JSON: it stops making sense at character 2"},
		{`{"input": {"k": `, "is not valid JSON: it ends before the value is complete"},
		{``, "is not valid JSON: it ends before the value is complete"},
		{`{"idempotency_key": 5}`, `has "idempotency_key" as a number, where a string is expected`},
		{`{"limit": "ten"}`, `has "limit" as a string, where a whole number is expected`},
		{`{"limit": 1.5}`, `has "limit" as the number 1.5, where a whole number is expected`},
		{`[1, 2]`, "must be an object, not a list"},
		{`{"inptu": {}}`, `has the unknown field "inptu"`},
	} {
		var v body
		dec := json.NewDecoder(bytes.NewReader([]byte(tc.doc)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&v)
		if err == nil {
			t.Errorf("%s decoded", tc.doc)
			continue
		}
		if got := Describe(err); got != tc.want {
			t.Errorf("%s (%v):\n got %s\nwant %s", tc.doc, err, got, tc.want)
		}
		// json.Unmarshal words some of these differently.
		if err := json.Unmarshal([]byte(tc.doc), &v); err != nil && tc.doc != `{"inptu": {}}` {
			if got := Describe(err); got != tc.want {
				t.Errorf("Unmarshal %s (%v):\n got %s\nwant %s", tc.doc, err, got, tc.want)
			}
		}
	}
}
