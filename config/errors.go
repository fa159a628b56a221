package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a configuration file.
type Problem struct {
	File string
	// Line and Col are 1-based and point at the offending value, at the key
	// of an unknown field, or at the enclosing mapping for a missing field.
	// Zero when the config did not come from a file.
	Line, Col int
	// Path names the setting, e.g. "jobs[1].schedule"; empty for a problem
	// with the file as a whole, such as a YAML syntax error.
	Path string
	// Name is the name of the job or resource Path is in ("report" for
	// jobs[13].schedule), so that a message names it as the user does;
	// empty when it has none or Path is that name itself.
	Name    string
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteString(":")
	}
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) + ":")
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if elem, rest := splitNamed(p.Path); p.Name != "" && elem != "" {
		b.WriteString(elem + " " + strconv.Quote(p.Name) + ": ")
		if rest != "" {
			b.WriteString(rest + ": ")
		}
	} else if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is every problem found in one configuration, in file order.
type Error struct {
	Problems []Problem
}

// MaxPrinted bounds the problems Error prints: past it, one line counts the
// rest. A user fixes the first ones first, and a file with thousands of
// mistakes (or a generated one) should not flood a terminal or a log.
const MaxPrinted = 100

// Error returns one problem per line, each as FILE:LINE:COL: path: message,
// at most MaxPrinted of them and then "and N more errors".
func (e *Error) Error() string {
	n := min(len(e.Problems), MaxPrinted)
	lines := make([]string, n, n+1)
	for i, p := range e.Problems[:n] {
		lines[i] = p.String()
	}
	if rest := len(e.Problems) - n; rest > 0 {
		lines = append(lines, fmt.Sprintf("and %d more errors", rest))
	}
	return strings.Join(lines, "\n")
}

// problems collects what decoding and validation find, so that a user
// sees every mistake in one run instead of fixing them one at a time.
type problems struct {
	file string
	list []Problem
	// nodes maps each path that appeared in the file to its value node.
	nodes map[string]*yaml.Node
	// broken holds paths whose value could not be decoded: checks on them
	// or below them would only repeat the same mistake in other words.
	broken map[string]bool
	// names maps each named list element ("jobs[13]") to its name.
	names map[string]string
	// seen drops exact repeats, which merging one anchor twice into the
	// same mapping (<<: [*a, *a]) would otherwise produce once per merge.
	seen map[Problem]bool
	// files maps a path whose value came from an included file (a team's
	// "jobs[7]") to that file; a path not in it is the main file's.
	files map[string]string
	// order is the files in the order they were read, so that problems
	// come out file by file.
	order []string
	// local maps an element of the merged config that came from an
	// included file ("jobs[7]") to its path in that file ("jobs[1]"), so
	// that a message's path reads as the file does.
	local map[string]string
}

func newProblems(file string) *problems {
	return &problems{file: file, nodes: map[string]*yaml.Node{}, broken: map[string]bool{}, names: map[string]string{}, seen: map[Problem]bool{},
		files: map[string]string{}, order: []string{file}, local: map[string]string{}}
}

// atNode records a problem at a node's position.
func (p *problems) atNode(n *yaml.Node, path, format string, args ...any) {
	pr := Problem{File: p.fileOf(path), Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		pr.Line, pr.Col = n.Line, n.Column
	}
	if p.seen[pr] {
		return
	}
	p.seen[pr] = true
	p.list = append(p.list, pr)
}

// add records a problem with path, positioned at the path's value or, when
// the path is not in the file (a default or a missing field), at the nearest
// enclosing value that is.
func (p *problems) add(path, format string, args ...any) {
	for q := path; ; q = parent(q) {
		if p.broken[q] {
			return
		}
		if q == "" {
			break
		}
	}
	p.atNode(p.node(path), path, format, args...)
}

// node returns the value node of path or of its nearest ancestor in the file.
func (p *problems) node(path string) *yaml.Node {
	for q := path; ; q = parent(q) {
		if n, ok := p.nodes[q]; ok {
			return n
		}
		if q == "" {
			return nil
		}
	}
}

// fileOf is the file path's value was written in.
func (p *problems) fileOf(path string) string {
	for q := path; q != ""; q = parent(q) {
		if f, ok := p.files[q]; ok {
			return f
		}
	}
	return p.file
}

// where names the position of path's value for a message about another
// value: "line 7" in the same file as other, "teams/a.yaml:7" in another.
func (p *problems) where(path, other string) string {
	if f := p.fileOf(path); f != p.fileOf(other) {
		return f + ":" + strconv.Itoa(p.line(path))
	}
	return "line " + strconv.Itoa(p.line(path))
}

// present reports whether path was written in the file.
func (p *problems) present(path string) bool {
	_, ok := p.nodes[path]
	return ok
}

// fromFile reports whether positions are known, that is, whether the config
// was decoded from a file rather than built in code.
func (p *problems) fromFile() bool { return len(p.nodes) > 0 }

// line returns the line of path's value, for messages that refer to it.
func (p *problems) line(path string) int {
	if n := p.node(path); n != nil {
		return n.Line
	}
	return 0
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := slices.Clone(p.list)
	for i, pr := range list {
		if elem, rest := splitNamed(pr.Path); elem != "" && rest != "name" {
			list[i].Name = p.names[elem]
		}
		if elem := reShifted.FindString(pr.Path); p.local[elem] != "" {
			list[i].Path = p.local[elem] + pr.Path[len(elem):]
		}
	}
	slices.SortStableFunc(list, func(a, b Problem) int {
		if a.File != b.File {
			return slices.Index(p.order, a.File) - slices.Index(p.order, b.File)
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return &Error{Problems: list}
}

// reNamed matches a path into a list whose elements have names.
var reNamed = regexp.MustCompile(`^(jobs|resources)\[\d+\]`)

// splitNamed splits "jobs[13].http.url" into "jobs[13]" and "http.url";
// elem is empty when path is not in a job or resource.
func splitNamed(path string) (elem, rest string) {
	elem = reNamed.FindString(path)
	if elem == "" {
		return "", ""
	}
	return elem, strings.TrimPrefix(path[len(elem):], ".")
}

// parent strips the last element of a path: "jobs[1].http" -> "jobs[1]" ->
// "jobs" -> "".
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
