package docs

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// maxLines is the most a doc may hold: past it a doc is read as a history
// rather than looked things up in, and is split by topic (issue 28, item 7).
const maxLines = 400

// The docs checked: every file of docs/ and the READMEs that link into it.
func docPaths(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no docs/*.md found: is the test run from test/docs?")
	}
	paths := []string{"README.md", "deploy/README.md"}
	for _, n := range names {
		paths = append(paths, "docs/"+filepath.Base(n))
	}
	return paths
}

func readDocs(t *testing.T) map[string]*doc {
	t.Helper()
	docs := map[string]*doc{}
	for _, p := range docPaths(t) {
		d, err := readDoc(root, p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = d
	}
	return docs
}

// Every relative link of a doc names a file of the repository, and every
// anchor a heading of the doc it points into.
func TestLinksResolve(t *testing.T) {
	docs := readDocs(t)
	for _, d := range docs {
		for _, l := range d.links {
			if external(l.target) {
				continue
			}
			file, frag, _ := strings.Cut(l.target, "#")
			target := d.path
			if file != "" {
				target = path.Clean(path.Join(path.Dir(d.path), file))
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
					t.Errorf("%s:%d: link %q: no file %s", d.path, l.line, l.target, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			into, ok := docs[target]
			if !ok {
				var err error
				if into, err = readDoc(root, target); err != nil {
					t.Fatal(err)
				}
				docs[target] = into
			}
			if !into.anchors[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", d.path, l.line, l.target, target, frag)
			}
		}
	}
}

// No doc is over maxLines lines.
func TestDocsAreShort(t *testing.T) {
	for _, d := range readDocs(t) {
		if strings.HasPrefix(d.path, "docs/") && d.lines > maxLines {
			t.Errorf("%s has %d lines, more than %d: split it by topic", d.path, d.lines, maxLines)
		}
	}
}

// A doc of docs/ with more than three sections opens with its contents: a
// link to each of its "## " sections before the first of them.
func TestLongDocsHaveContents(t *testing.T) {
	// protocol.md is the engine's design in progress, kept by its author.
	skip := []string{"docs/protocol.md"}
	for _, d := range readDocs(t) {
		if !strings.HasPrefix(d.path, "docs/") || len(d.h2) <= 3 || slices.Contains(skip, d.path) {
			continue
		}
		linked := map[string]bool{}
		for _, l := range d.links {
			if strings.HasPrefix(l.target, "#") && l.line < d.firstH2 {
				linked[l.target[1:]] = true
			}
		}
		for _, a := range d.h2 {
			if !linked[a] {
				t.Errorf("%s: no contents before its first section link #%s", d.path, a)
			}
		}
	}
}

// The anchors are GitHub's, so links that work in the browser work here.
func TestAnchor(t *testing.T) {
	for title, want := range map[string]string{
		"Design": "design",
		"Ticks materialized ahead: a leader's death costs no tick": "ticks-materialized-ahead-a-leaders-death-costs-no-tick",
		"Strict retries (`retries.hold_slot`)":                     "strict-retries-retrieshold_slot",
		"Admission (section 11)":                                   "admission-section-11",
		"Sharded jobs: who sees \"I am last\"":                     "sharded-jobs-who-sees-i-am-last",
		"@every":                                                   "every",
	} {
		if got := anchor(title); got != want {
			t.Errorf("anchor(%q) = %q, want %q", title, got, want)
		}
	}
}
