package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxSecretsFile bounds a headers_file or env_file: both hold a handful of
// values, and a path pointing at something large by mistake should fail
// fast rather than fill memory.
const maxSecretsFile = 1 << 20

// loadSecrets reads every job's headers_file and env_file and merges their
// values into headers and env, so that what runs is one spec however its
// values were written. Paths are relative to the config file's directory.
// Messages name keys and lines but never values: they reach logs and
// /api/v1/status.
func (c *Config) loadSecrets(p *problems, dir string) {
	for i := range c.Jobs {
		j := &c.Jobs[i]
		path := "jobs[" + strconv.Itoa(i) + "]"
		if h := j.HTTP; h != nil && h.HeadersFile != "" {
			fp := path + ".http.headers_file"
			if file, ok := readSecrets(p, fp, dir, h.HeadersFile); ok {
				if vals, ok := headersFrom(p, fp, h.HeadersFile, file); ok {
					h.Headers = mergeSecrets(p, fp, h.HeadersFile, "header", "headers", path+".http.headers", h.Headers, vals, http.CanonicalHeaderKey)
				}
			}
		}
		if e := j.Exec; e != nil && e.EnvFile != "" {
			fp := path + ".exec.env_file"
			if file, ok := readSecrets(p, fp, dir, e.EnvFile); ok {
				if vals, ok := envFrom(p, fp, e.EnvFile, file); ok {
					e.Env = mergeSecrets(p, fp, e.EnvFile, "variable", "env", path+".exec.env", e.Env, vals, nil)
				}
			}
		}
	}
}

// secret is one value read from a file, with the line it was on.
type secret struct {
	name, value string
	line        int
}

func readSecrets(p *problems, path, dir, name string) ([]byte, bool) {
	full := name
	if !filepath.IsAbs(full) {
		full = filepath.Join(dir, full)
	}
	f, err := os.Open(full)
	if err != nil {
		p.add(path, "cannot read %q: %s", name, pathErr(err))
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretsFile+1))
	switch {
	case err != nil:
		p.add(path, "cannot read %q: %s", name, pathErr(err))
		return nil, false
	case len(data) > maxSecretsFile:
		p.add(path, "%s is larger than %d bytes", name, maxSecretsFile)
		return nil, false
	}
	return data, true
}

// headersFrom reads a YAML mapping of header name to value. Anchors, merge
// keys and nested values have no use here and are refused.
func headersFrom(p *problems, path, name string, data []byte) ([]secret, bool) {
	root, err := parseYAML(data)
	if err != nil {
		p.add(path, "%s: %v", name, err)
		return nil, false
	}
	if root == nil || root.Kind != yaml.MappingNode || len(root.Content) == 0 {
		p.add(path, "%s: want a mapping of header name to value, e.g. \"Authorization: Bearer ...\"", name)
		return nil, false
	}
	var out []secret
	ok := true
	seen := map[string]int{} // canonical name -> line
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s:%d:%d", name, k.Line, k.Column)
		switch {
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge":
			p.add(path, "%s: want a header name", at)
			ok = false
		case !isToken(k.Value):
			p.add(path, "%s: invalid header name %q", at, k.Value)
			ok = false
		case v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null":
			p.add(path, "%s: header %q: want a string value", at, k.Value)
			ok = false
		case strings.ContainsAny(v.Value, "\r\n\x00"):
			p.add(path, "%s: header %q: value must not contain line breaks or NUL", at, k.Value)
			ok = false
		case seen[http.CanonicalHeaderKey(k.Value)] > 0:
			// Header names are case-insensitive: X-Token and x-token
			// would be one header with a value chosen at random.
			p.add(path, "%s: header %q is set twice (first on line %d)", at, k.Value, seen[http.CanonicalHeaderKey(k.Value)])
			ok = false
		default:
			seen[http.CanonicalHeaderKey(k.Value)] = k.Line
			out = append(out, secret{name: k.Value, value: v.Value, line: k.Line})
		}
	}
	return out, ok
}

// envFrom reads KEY=VALUE lines; blank lines and lines starting with "#"
// are skipped. The value is everything after the first "=", taken as is:
// no quotes are removed and nothing is expanded, so what the file says is
// what the command gets.
func envFrom(p *problems, path, name string, data []byte) ([]secret, bool) {
	var out []secret
	ok := true
	seen := map[string]int{} // name -> line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxSecretsFile+1)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		key, value, found := strings.Cut(text, "=")
		switch {
		case !found:
			p.add(path, "%s:%d: want KEY=VALUE", name, n)
			ok = false
		case key == "" || strings.ContainsAny(key, " \t\x00"):
			p.add(path, "%s:%d: invalid environment variable name %q", name, n, key)
			ok = false
		case strings.ContainsRune(value, 0):
			p.add(path, "%s:%d: %s: value must not contain NUL", name, n, key)
			ok = false
		case seen[key] > 0:
			p.add(path, "%s:%d: %s is set twice (first on line %d)", name, n, key, seen[key])
			ok = false
		default:
			seen[key] = n
			out = append(out, secret{name: key, value: value, line: n})
		}
	}
	if err := sc.Err(); err != nil {
		p.add(path, "%s: %v", name, err)
		return nil, false
	}
	return out, ok
}

// mergeSecrets adds vals to inline and returns the result. A name set in
// both places is a problem: which one wins would be a guess. fold maps a
// name to the form in which two names are the same (header names are
// case-insensitive); nil compares them exactly.
func mergeSecrets(p *problems, path, file, kind, inlineKey, inlinePath string, inline map[string]string, vals []secret, fold func(string) string) map[string]string {
	if fold == nil {
		fold = func(s string) string { return s }
	}
	written := map[string]string{} // folded name -> name as written inline
	for name := range inline {
		written[fold(name)] = name
	}
	out := make(map[string]string, len(inline)+len(vals))
	maps.Copy(out, inline)
	for _, s := range vals {
		if name, dup := written[fold(s.name)]; dup {
			p.add(path, "%s %q is set both in %s (line %d) and in %s (line %d)",
				kind, s.name, inlineKey, p.line(fmt.Sprintf("%s[%q]", inlinePath, name)), file, s.line)
			continue
		}
		out[s.name] = s.value
	}
	return out
}
