package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the configuration file at path. Problems with the
// content come back as *Error; a file that cannot be read, as the os error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "open PATH: " would repeat the path
		}
		return nil, fmt.Errorf("cannot read the config file %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse decodes data strictly, applies defaults and validates the result.
// filename only prefixes the problems. On any problem it returns an *Error
// with all of them, in file order, and no Config.
func Parse(filename string, data []byte) (*Config, error) {
	p := newProblems(filename)
	root, err := parseYAML(data)
	if err != nil {
		p.list = append(p.list, syntaxProblem(filename, data, err))
		return nil, p.err()
	}
	cfg := &Config{}
	cfg.setDefaults()
	if root == nil {
		p.atNode(&yaml.Node{Line: 1, Column: 1}, "", "file is empty")
		return nil, p.err()
	}
	exp := newExpansion(root)
	decoder{p, exp}.decode(root, reflect.ValueOf(cfg).Elem(), "")
	if exp.refused != nil {
		p.list = []Problem{*exp.refused}
		return nil, p.err()
	}
	cfg.Files = []File{{Path: filename, Hash: fileHash(data)}}
	cfg.include(p, filename)
	cfg.checkTeamDefaults(p)
	cfg.loadSecrets(p, filepath.Dir(filename))
	cfg.readSinkHeaders(p, filename)
	cfg.validate(p)
	if err := p.err(); err != nil {
		return nil, err
	}
	cfg.normalize()
	return cfg, nil
}

// parseYAML returns the content of the single document in data, or nil
// when there is none.
func parseYAML(data []byte) (*yaml.Node, error) {
	return parseYAMLFrom(bytes.NewReader(data))
}

func parseYAMLFrom(r io.Reader) (*yaml.Node, error) {
	dec := yaml.NewDecoder(r)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &docError{line: extra.Line}
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// docError rejects a second YAML document, which would otherwise be ignored.
type docError struct{ line int }

func (e *docError) Error() string {
	return "yaml: line " + strconv.Itoa(e.line) + ": only one document is allowed"
}
