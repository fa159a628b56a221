package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// doc is one markdown file as the checks see it: its headings' anchors and
// its links, outside code.
type doc struct {
	path    string // relative to the repository root, slash-separated
	lines   int
	anchors map[string]bool
	h2      []string // anchors of its "## " headings, in order
	firstH2 int      // line of the first "## " heading, 0 when none
	links   []link
}

type link struct {
	line   int
	target string
}

// linkRE finds inline links and images, [text](target) and ![alt](target);
// a target with a title ("target "title"") keeps only the target.
var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpanRE is inline code, whose brackets are not links.
var codeSpanRE = regexp.MustCompile("`[^`]*`")

func readDoc(root, rel string) (*doc, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := &doc{path: rel, anchors: map[string]bool{}}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d.lines++
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(text, "    ") || strings.HasPrefix(text, "\t") {
			continue
		}
		if level, title, ok := heading(text); ok {
			a := anchor(title)
			if n := seen[a]; n > 0 {
				seen[a]++
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			d.anchors[a] = true
			if level == 2 {
				d.h2 = append(d.h2, a)
				if d.firstH2 == 0 {
					d.firstH2 = d.lines
				}
			}
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(text, ""), -1) {
			d.links = append(d.links, link{line: d.lines, target: m[1]})
		}
	}
	return d, sc.Err()
}

// heading reports an ATX heading's level and text.
func heading(line string) (int, string, bool) {
	level := 0
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || level == len(line) || line[level] != ' ' {
		return 0, "", false
	}
	return level, strings.TrimSpace(line[level:]), true
}

// anchor is the id GitHub gives a heading: lower case, spaces to hyphens,
// every character but letters, digits, hyphens and underscores dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// external links are not this test's to check.
func external(target string) bool {
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	return false
}
