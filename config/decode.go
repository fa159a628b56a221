package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder fills a value from a yaml.Node tree, strictly: unknown and
// repeated keys are problems, and so is any value of the wrong kind. yaml's
// own strict decoding stops at the first unknown field and reports lines
// only; walking the nodes ourselves gives every problem its line, column
// and path, and records where each setting was written for validation.
//
// A null value (a key with nothing after it) leaves the default in place.
type decoder struct {
	*problems
	exp *expansion
}

// defaulter is a value that has defaults to start from before decoding.
type defaulter interface{ setDefaults() }

var durationType = reflect.TypeFor[Duration]()

func (d decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	n, done, ok := d.follow(n, path)
	defer done()
	if !ok {
		return
	}
	d.nodes[path] = n
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		if v.Kind() == reflect.Pointer {
			v.SetZero()
		}
		return
	}
	switch {
	case v.Type() == durationType:
		d.duration(n, v, path)
	case v.Kind() == reflect.Pointer:
		// Allocate even when the value turns out to be malformed: the
		// key was written, and "missing" would be the wrong complaint.
		e := reflect.New(v.Type().Elem())
		if df, ok := e.Interface().(defaulter); ok {
			df.setDefaults()
		}
		v.Set(e)
		d.decode(n, e.Elem(), path)
	case v.Kind() == reflect.Struct:
		d.structure(n, v, path)
	case v.Kind() == reflect.Slice:
		d.list(n, v, path)
	case v.Kind() == reflect.Map:
		d.dict(n, v, path)
	case v.Kind() == reflect.Interface:
		d.freeForm(n, v, path)
	default:
		d.scalar(n, v, path)
	}
}

// freeForm decodes whatever YAML holds (a job's input).
func (d decoder) freeForm(n *yaml.Node, v reflect.Value, path string) {
	var x any
	if err := n.Decode(&x); err != nil {
		d.bad(n, path, "%s", err)
		return
	}
	if x != nil {
		v.Set(reflect.ValueOf(x))
	}
}

// scalar decodes a string, an integer or a boolean, each only from a
// scalar of its own YAML type.
func (d decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		if d.want(n, yaml.ScalarNode, path, "a string") {
			v.SetString(n.Value)
		}
	case reflect.Int:
		if !d.want(n, yaml.ScalarNode, path, "an integer") {
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
		if n.ShortTag() != "!!int" || err != nil {
			d.bad(n, path, "expected an integer, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Bool:
		if !d.want(n, yaml.ScalarNode, path, "true or false") {
			return
		}
		b, err := strconv.ParseBool(n.Value)
		if n.ShortTag() != "!!bool" || err != nil {
			d.bad(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	default:
		d.bad(n, path, "cannot decode into %s", v.Type())
	}
}

func (d decoder) bad(n *yaml.Node, path, format string, args ...any) {
	d.atNode(n, path, format, args...)
	d.broken[path] = true
}

// want checks the node's kind; "what" names the expected kind for the message.
func (d decoder) want(n *yaml.Node, kind yaml.Kind, path, what string) bool {
	if n.Kind == kind {
		return true
	}
	d.bad(n, path, "expected %s, got %s", what, describe(n))
	return false
}

func (d decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if !d.want(n, yaml.ScalarNode, path, "a duration") {
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.bad(n, path, `invalid duration %q: want e.g. "30s", "5m" or "1h30m"`, n.Value)
		return
	}
	v.SetInt(int64(dur))
}

func (d decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if !d.want(n, yaml.MappingNode, path, "a mapping") {
		return
	}
	if !d.spend(len(n.Content)/2, path) {
		return
	}
	fields := fieldsOf(v.Type())
	// Merged mappings first: keys written next to "<<" win wherever they
	// stand.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].ShortTag() == "!!merge" {
			d.merge(n.Content[i+1], v, path)
		}
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.ShortTag() == "!!merge" {
			continue
		}
		if first, ok := seen[key.Value]; ok {
			d.bad(key, join(path, key.Value), "duplicate key %q (first at line %d)", key.Value, first.Line)
			continue
		}
		seen[key.Value] = key
		idx, ok := fields[key.Value]
		if !ok && path == "" && strings.HasPrefix(key.Value, "x-") {
			// Top-level "x-" keys hold anchors to merge from, as in
			// docker compose files; they configure nothing themselves.
			continue
		}
		if !ok {
			d.atNode(key, path, "unknown field %q", key.Value)
			continue
		}
		d.decode(val, v.Field(idx), join(path, key.Value))
	}
}

// merge applies a YAML merge key ("<<: *defaults"), so that jobs can share
// settings through anchors.
func (d decoder) merge(n *yaml.Node, v reflect.Value, path string) {
	n, done, ok := d.follow(n, path)
	defer done()
	if !ok {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		d.structure(n, v, path)
	case yaml.SequenceNode:
		for _, m := range n.Content {
			d.merge(m, v, path)
		}
	default:
		d.bad(n, path, "merge key: expected a mapping, got %s", describe(n))
	}
}

func (d decoder) list(n *yaml.Node, v reflect.Value, path string) {
	if !d.want(n, yaml.SequenceNode, path, "a list") {
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		e := s.Index(i)
		if df, ok := e.Addr().Interface().(defaulter); ok {
			df.setDefaults()
		}
		d.decode(item, e, fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(s)
}

func (d decoder) dict(n *yaml.Node, v reflect.Value, path string) {
	if !d.want(n, yaml.MappingNode, path, "a mapping") {
		return
	}
	if !d.spend(len(n.Content)/2, path) {
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		kp := fmt.Sprintf("%s[%q]", path, key.Value)
		if !d.want(key, yaml.ScalarNode, kp, "a string key") {
			continue
		}
		if first, ok := seen[key.Value]; ok {
			d.bad(key, kp, "duplicate key %q (first at line %d)", key.Value, first.Line)
			continue
		}
		seen[key.Value] = key
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, e, kp)
		m.SetMapIndex(reflect.ValueOf(key.Value).Convert(v.Type().Key()), e)
	}
	v.Set(m)
}

// describe shows a node in a message: a scalar quoted, otherwise its kind.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return strconv.Quote(n.Value)
	}
}

var fieldCache sync.Map // reflect.Type -> map[string]int

// fieldsOf maps the yaml names of a struct's fields to their indexes.
func fieldsOf(t reflect.Type) map[string]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
	}
	fieldCache.Store(t, m)
	return m
}
