package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return res, string(body)
}

func TestServesPageAndAssets(t *testing.T) {
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/", "text/html; charset=utf-8", "<title>etcd scheduler</title>"},
		{"/style.css", "text/css; charset=utf-8", "--bad:"},
		{"/api.js", "text/javascript; charset=utf-8", "Authorization"},
		{"/dom.js", "text/javascript; charset=utf-8", "window.SchedulerDOM"},
		{"/cluster.js", "text/javascript; charset=utf-8", "window.SchedulerCluster"},
		{"/jobs.js", "text/javascript; charset=utf-8", "window.SchedulerJobs"},
		{"/app.js", "text/javascript; charset=utf-8", "/api/v1/jobs"},
		{"/svg.js", "text/javascript; charset=utf-8", "window.SchedulerSVG"},
		{"/timeline-draw.js", "text/javascript; charset=utf-8", "window.SchedulerTimelineDraw"},
		{"/lateness.js", "text/javascript; charset=utf-8", "window.SchedulerLateness"},
		{"/timeline.js", "text/javascript; charset=utf-8", "/runs?limit="},
		{"/outage.js", "text/javascript; charset=utf-8", "etcd_unavailable"},
	} {
		res, body := get(t, tc.path)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", tc.path, res.StatusCode)
			continue
		}
		if got := res.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q does not start from nothing", tc.path, csp)
		}
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", tc.path, got)
		}
	}
}

func TestUnknownPathIsNotFound(t *testing.T) {
	for _, path := range []string{"/nope", "/nope.js", "/api/v1/nothing"} {
		if res, _ := get(t, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, res.StatusCode)
		}
	}
}

var (
	// absoluteURL is any scheme-qualified or protocol-relative address.
	absoluteURL = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://|["'(=]\s*//[^/\s]`)
	// reference is a src or href attribute, or a CSS url().
	reference = regexp.MustCompile(`(?i)(?:\b(?:src|href)\s*=\s*["']([^"']*)["']|url\(\s*["']?([^"')]*))`)
)

// TestOnlyLocalURLs: the page must work on a machine with no internet, so
// it may reference nothing but its own assets and the API of its origin.
func TestOnlyLocalURLs(t *testing.T) {
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("nothing embedded")
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if m := absoluteURL.FindString(text); m != "" {
			t.Errorf("%s references an absolute URL near %q", e.Name(), m)
		}
		for _, m := range reference.FindAllStringSubmatch(text, -1) {
			ref := m[1] + m[2]
			if ref == "data:," {
				continue // the empty favicon, so the browser asks for none
			}
			res, _ := get(t, "/"+strings.TrimPrefix(ref, "/"))
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s references %q, which answers %d", e.Name(), ref, res.StatusCode)
			}
		}
	}
}

// embedded lists the embedded files whose names end in one of exts.
func embedded(t *testing.T, exts ...string) []string {
	t.Helper()
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		for _, ext := range exts {
			if strings.HasSuffix(e.Name(), ext) {
				names = append(names, e.Name())
			}
		}
	}
	return names
}

var (
	// scriptTag is a script element of index.html, and scriptSrc its file.
	scriptTag = regexp.MustCompile(`<script\b([^>]*)>`)
	scriptSrc = regexp.MustCompile(`\bsrc="([^"]+)"`)
)

// TestPageLoadsEveryScript: each embedded script is loaded by index.html,
// once, from a file and deferred (the policy runs no inline script), and
// app.js, which starts the polling and calls the others, comes last.
func TestPageLoadsEveryScript(t *testing.T) {
	page, err := files.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	var loaded []string
	times := map[string]int{}
	for _, m := range scriptTag.FindAllStringSubmatch(string(page), -1) {
		src := scriptSrc.FindStringSubmatch(m[1])
		if src == nil {
			t.Errorf("inline script %q", m[0])
			continue
		}
		if !strings.Contains(m[1], " defer") {
			t.Errorf("%s is not deferred", src[1])
		}
		loaded = append(loaded, src[1])
		times[src[1]]++
	}
	scripts := embedded(t, ".js")
	for _, name := range scripts {
		if times[name] != 1 {
			t.Errorf("index.html loads %s %d times, want once", name, times[name])
		}
	}
	if len(loaded) != len(scripts) {
		t.Errorf("index.html loads %q; the embedded scripts are %q", loaded, scripts)
	}
	if len(loaded) == 0 || loaded[len(loaded)-1] != "app.js" {
		t.Errorf("index.html loads %q: app.js should come last", loaded)
	}
}

// TestScriptNeverParsesHTML: everything the page shows comes from the API
// and may hold a job's output, so the scripts set text, never markup.
func TestScriptNeverParsesHTML(t *testing.T) {
	scripts := embedded(t, ".js")
	if len(scripts) < 2 {
		t.Fatalf("embedded scripts %q: want app.js and the timeline's at least", scripts)
	}
	for _, name := range scripts {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s", name, sink)
			}
		}
	}
}

// TestNoInlineStyle: the policy allows style sheets from this origin only,
// so a style attribute would be dropped by the browser; colours and sizes
// of the SVG come from classes in style.css.
func TestNoInlineStyle(t *testing.T) {
	for _, name := range embedded(t, ".html", ".js") {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"style=", "'style'", "\"style\"", ".style."} {
			if strings.Contains(string(b), s) {
				t.Errorf("%s sets an inline style (%s)", name, s)
			}
		}
	}
}

// TestAssets: the paths a router must route are every file the page loads,
// not index.html, which is the page at "/".
func TestAssets(t *testing.T) {
	assets := Assets()
	want := map[string]bool{"/style.css": true, "/app.js": true, "/timeline.js": true}
	for _, p := range assets {
		delete(want, p)
		if p == "/index.html" {
			t.Errorf("Assets lists %s", p)
		}
		if res, _ := get(t, p); res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", p, res.StatusCode)
		}
	}
	for p := range want {
		t.Errorf("Assets %q lacks %s", assets, p)
	}
}
