package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the configuration file at path. Problems with the
// content come back as *Error; a file that cannot be read, as the os error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
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
	decoder{p}.decode(root, reflect.ValueOf(cfg).Elem(), "")
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
	dec := yaml.NewDecoder(bytes.NewReader(data))
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

var reYAMLLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// maxSearchLines bounds the search for the line of a syntax error.
const maxSearchLines = 5000

// syntaxProblem positions a yaml syntax error. yaml reports a line but no
// column, and the line is often where the enclosing block began rather
// than where it broke (and is left out entirely for the first line). The
// first line at which a prefix of the file fails with the same message is
// where the user has to look (this parses the file once per line, which is
// nothing for a config file and only happens when it is broken); within it we point at a tab, the most common
// cause, or else at the first character.
func syntaxProblem(filename string, data []byte, err error) Problem {
	pr := Problem{File: filename, Line: 1, Col: 1, Message: err.Error()}
	m := reYAMLLine.FindStringSubmatch(err.Error())
	if m == nil {
		return pr
	}
	pr.Message = m[2]
	if m[1] != "" {
		pr.Line, _ = strconv.Atoi(m[1])
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) <= maxSearchLines {
		prefix := 0
		for i, l := range lines {
			prefix += len(l)
			_, perr := parseYAML(data[:prefix])
			if perr == nil {
				continue
			}
			// A cut through a multi-line value fails differently;
			// keep going until the cut fails the way the file does.
			if pm := reYAMLLine.FindStringSubmatch(perr.Error()); pm != nil && pm[2] == pr.Message {
				pr.Line = i + 1
				break
			}
		}
	}
	if pr.Line < 1 || pr.Line > len(lines) {
		return pr
	}
	text := strings.TrimRight(lines[pr.Line-1], "\r\n")
	if i := strings.IndexByte(text, '\t'); i >= 0 &&
		(strings.Contains(pr.Message, "tab") || strings.Contains(pr.Message, "cannot start any token")) {
		pr.Col = utf8.RuneCountInString(text[:i]) + 1
		pr.Message = "found a tab character: YAML indents with spaces only"
		return pr
	}
	pr.Col = len(text) - len(strings.TrimLeft(text, " ")) + 1
	if strings.Contains(pr.Message, "'-' indicator") || strings.Contains(pr.Message, "expected key") {
		pr.Message += " (check the indentation)"
	}
	return pr
}
