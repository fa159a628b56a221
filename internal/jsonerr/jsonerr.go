// Package jsonerr words encoding/json's errors for the person who wrote
// the JSON: where it stops being JSON, which field has the wrong kind of
// value, which field is unknown, without Go's type names.
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Describe says what is wrong with a JSON document that failed to decode,
// as a phrase to follow its subject: "the body " + Describe(err).
func Describe(err error) string {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.As(err, &syntax) && syntax.Error() == "unexpected end of JSON input":
		return "is not valid JSON: it ends before the value is complete"
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not valid JSON: it stops making sense at character %d", syntax.Offset)
	case errors.As(err, &kind):
		field := kind.Field
		if field == "" {
			return fmt.Sprintf("must be %s, not %s", expected(kind.Type), article(kind.Value))
		}
		return fmt.Sprintf("has %q as %s, where %s is expected", field, article(kind.Value), expected(kind.Type))
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "has the unknown field " + name
	}
	return "is not valid JSON: " + strings.TrimPrefix(msg, "json: ")
}

// expected names the kind of JSON value t decodes from.
func expected(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
}

// article puts "a" or "an" before the JSON kind encoding/json names
// ("number", "string", "object", "array", "bool").
func article(value string) string {
	switch {
	case value == "array":
		return "a list"
	case value == "bool":
		return "true or false"
	case strings.HasPrefix(value, "number "):
		return "the number " + strings.TrimPrefix(value, "number ")
	case value == "object":
		return "an object"
	}
	return "a " + value
}
