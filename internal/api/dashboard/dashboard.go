// Package dashboard is the operator's page at "/": one HTML page, its style
// sheet and its scripts, embedded in the binary so that a replica needs no
// build step, no CDN and no file beside it. The page reads the JSON API of
// docs/api.md from the same origin and polls it once a second.
package dashboard

import (
	"embed"
	"net/http"
	"path"
)

//go:embed index.html style.css api.js dom.js svg.js timeline-draw.js lateness.js timeline.js cluster.js jobs.js outage.js app.js
var files embed.FS

// contentTypes are set by extension here rather than left to the mime
// package, which consults the host's /etc/mime.types and may, for instance,
// call a script application/x-javascript.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// policy lets the page load nothing but itself: every byte it shows comes
// from this replica's API, and a job's output cannot smuggle in a script.
const policy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Assets are the paths of the files the page loads ("/style.css",
// "/app.js", ...): every embedded file but index.html, which is served at
// "/" only. A router that names its routes routes each of these.
func Assets() []string {
	entries, err := files.ReadDir(".")
	if err != nil {
		panic(err) // the embedded root always reads
	}
	var paths []string
	for _, e := range entries {
		if e.Name() != "index.html" {
			paths = append(paths, "/"+e.Name())
		}
	}
	return paths
}

// Handler serves the page at "/" and its assets by name; anything else is 404.
func Handler() http.Handler {
	static := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		name := r.URL.Path
		if name == "/" {
			name = "/index.html"
		}
		if ct, ok := contentTypes[path.Ext(name)]; ok {
			h.Set("Content-Type", ct)
		}
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The files change only with the binary, and an embedded file has no
		// modification time to revalidate against: always ask again.
		h.Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	})
}
