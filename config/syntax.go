package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

var reYAMLLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// syntaxProblem positions a yaml syntax error. yaml reports a line but no
// column, and the line is often where the enclosing block began rather
// than where it broke (and is left out entirely for the first line). The
// first line at which a prefix of the file fails with the same message is
// where the user has to look (see errorLine); within it we point at a
// tab, the most common cause, or else at the first character.
func syntaxProblem(filename string, data []byte, err error) Problem {
	pr := Problem{File: filename, Line: 1, Col: 1, Message: err.Error()}
	if de, ok := errors.AsType[*docError](err); ok {
		pr.Line, pr.Message = de.line, "only one document is allowed"
		return pr
	}
	m := reYAMLLine.FindStringSubmatch(err.Error())
	if m == nil {
		return pr
	}
	pr.Message = m[2]
	lines := bytes.SplitAfter(data, []byte("\n"))
	pr.Line = errorLine(data, lines, pr.Message)
	if pr.Line < 1 || pr.Line > len(lines) {
		return pr
	}
	text := strings.TrimRight(string(lines[pr.Line-1]), "\r\n")
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

// errorLine returns the first line n such that the file cut after line n
// fails with msg.
//
// Trying every cut in turn parses the file once per line: 7s for an error
// after 1,000 long comment lines, 25s after 5,000. Instead one parse feeds
// yaml a line at a time and notes how many lines it had taken when it
// failed: yaml reads only as far as it must, so that is the line it broke
// on or one just after it. A few more parses confirm it: the cut there
// fails, the cut a line earlier does not. That is a handful of parses,
// linear in the file. Only when the error is found at the end of the stream (an
// unclosed quote or bracket, which yaml notices only when the input runs
// out) is the line searched for, by bisection: log2(lines) parses.
func errorLine(data []byte, lines [][]byte, msg string) int {
	ends := make([]int, len(lines)+1) // ends[n]: length of the first n lines
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	fails := func(n int) bool {
		_, err := parseYAML(data[:ends[n]])
		if err == nil {
			return false
		}
		m := reYAMLLine.FindStringSubmatch(err.Error())
		// A cut through a multi-line value fails differently; only the
		// same complaint counts.
		return m != nil && m[2] == msg
	}
	lr := &lineReader{lines: lines}
	_, _ = parseYAMLFrom(lr)
	hi := len(lines) // a cut that fails; the answer is at or before it
	if last := lr.next; last >= 1 && fails(last) {
		// yaml may have read a line or two past the one it broke on,
		// to see where a block ends.
		hi = last
		for range 3 {
			if hi == 1 || !fails(hi-1) {
				return hi
			}
			hi--
		}
	}
	lo := 1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

// lineReader hands out at most one line per Read, so that how far the
// reader got tells how far the parser needed to look.
type lineReader struct {
	lines [][]byte
	next  int // lines handed out, the last one possibly in part
	off   int // bytes of lines[next-1] handed out
}

func (r *lineReader) Read(p []byte) (int, error) {
	if r.next > 0 && r.off < len(r.lines[r.next-1]) {
		n := copy(p, r.lines[r.next-1][r.off:])
		r.off += n
		return n, nil
	}
	if r.next >= len(r.lines) {
		return 0, io.EOF
	}
	r.next++
	r.off = copy(p, r.lines[r.next-1])
	return r.off, nil
}
