package replica

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// pagingJobs: a job to trigger, and others listed out of name order, so a
// page in name order is not the file's order by chance.
const pagingJobs = `jobs:
  - name: runner
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["true"]
`

var pagingIdle = []string{"j-c", "j-a", "j-e", "j-b", "j-d"}

// page is one answer of a listing: what it held and where the next starts.
type page struct {
	status int
	names  []string // job names or run ids, in the answer's order
	code   string   // the error code of a 4xx
	cursor string   // X-Next-Cursor
	link   string   // the next request, from the Link header
}

// getPage sends GET base+path and reads a list of objects with key.
func getPage(t *testing.T, base, path, key string) page {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	p := page{status: resp.StatusCode, cursor: resp.Header.Get("X-Next-Cursor")}
	if l := resp.Header.Get("Link"); l != "" {
		target, ok := strings.CutSuffix(l, `>; rel="next"`)
		if !ok || !strings.HasPrefix(target, "<") {
			t.Fatalf("GET %s: Link %q is not <...>; rel=\"next\"", path, l)
		}
		p.link = target[1:]
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("GET %s: %d with a body that is not an error: %v", path, resp.StatusCode, err)
		}
		p.code = e.Error.Code
		return p
	}
	var list []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("GET %s: the body is not a list: %v", path, err)
	}
	for _, v := range list {
		p.names = append(p.names, v[key].(string))
	}
	return p
}

// walk follows Link headers from first to the last page and returns every
// entry in order, checking on each page that X-Next-Cursor names what the
// Link asks for next and that only the last page has no cursor.
func walk(t *testing.T, base, first, key, cursor string, limit int) (all []string, pages int) {
	t.Helper()
	for path := first; ; pages++ {
		if pages > 100 {
			t.Fatalf("more than 100 pages from %s", first)
		}
		p := getPage(t, base, path, key)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, p.status, p.code)
		}
		all = append(all, p.names...)
		if p.link == "" {
			if p.cursor != "" {
				t.Fatalf("GET %s: X-Next-Cursor %q without a Link", path, p.cursor)
			}
			if len(p.names) > limit {
				t.Fatalf("GET %s: last page of %d, limit %d", path, len(p.names), limit)
			}
			return all, pages + 1
		}
		if len(p.names) != limit {
			t.Fatalf("GET %s: a page with a next one holds %d, want the limit %d", path, len(p.names), limit)
		}
		u, err := url.Parse(p.link)
		if err != nil {
			t.Fatalf("Link %q: %v", p.link, err)
		}
		q := u.Query()
		if p.cursor != p.names[len(p.names)-1] || q.Get(cursor) != p.cursor || q.Get("limit") != itoa(limit) {
			t.Fatalf("GET %s: X-Next-Cursor %q, Link %q; want both to name the page's last entry %q with limit %d",
				path, p.cursor, p.link, p.names[len(p.names)-1], limit)
		}
		path = p.link
	}
}

var itoa = strconv.Itoa

// A client pages through a job's history with ?limit and ?before, and
// through the jobs with ?limit and ?after, following the Link header:
// every entry once, in order, none missing; a cursor naming nothing and a
// bad limit are refused with the codes of docs/api.md.
func TestPaging(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jobs.yaml")
	jobsYAML := pagingJobs
	for _, n := range pagingIdle {
		jobsYAML += "  - name: " + n + "\n    schedule: \"0 0 1 1 *\"\n    catch_up: none\n    exec:\n      command: [\"true\"]\n"
	}
	if err := os.WriteFile(path, []byte(etcdtest.Config(newEtcd(t), "/paging/", jobsYAML)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, "p1", path, noWatch)

	// Seven runs, one after the other: the history, newest first, is
	// their reverse.
	var ids []string
	for range 7 {
		id := r.trigger("runner", "")
		r.waitRun(id, "finished", 30*time.Second)
		ids = append([]string{id}, ids...)
	}

	t.Run("runs", func(t *testing.T) {
		for _, limit := range []int{1, 3, 7, 50} {
			got, pages := walk(t, r.url, "/api/v1/jobs/runner/runs?limit="+itoa(limit), "run_id", "before", limit)
			if !slices.Equal(got, ids) {
				t.Errorf("limit %d: paged %q, want every run once, newest first: %q", limit, got, ids)
			}
			if want := (len(ids) + limit - 1) / limit; pages != want {
				t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
			}
		}
		// A page from the middle: only older runs.
		p := getPage(t, r.url, "/api/v1/jobs/runner/runs?limit=2&before="+url.QueryEscape(ids[2]), "run_id")
		if !slices.Equal(p.names, ids[3:5]) || p.cursor != ids[4] {
			t.Errorf("before %s: %q next %q, want %q next %q", ids[2], p.names, p.cursor, ids[3:5], ids[4])
		}
	})

	t.Run("jobs", func(t *testing.T) {
		want := append([]string{"runner"}, pagingIdle...)
		slices.Sort(want)
		for _, limit := range []int{1, 2, 4, 6} {
			got, _ := walk(t, r.url, "/api/v1/jobs?limit="+itoa(limit), "name", "after", limit)
			if !slices.Equal(got, want) {
				t.Errorf("limit %d: paged %q, want every job once, in name order: %q", limit, got, want)
			}
		}
		// Without a limit: everything, the file's order, no cursor.
		p := getPage(t, r.url, "/api/v1/jobs", "name")
		if len(p.names) != 6 || p.names[0] != "runner" || p.cursor != "" || p.link != "" {
			t.Errorf("no limit: %q next %q %q", p.names, p.cursor, p.link)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			path   string
			status int
			code   string
		}{
			{"/api/v1/jobs/runner/runs?before=runner@nope", http.StatusNotFound, "unknown_run"},
			{"/api/v1/jobs/runner/runs?before=" + url.QueryEscape(ids[0]) + "x", http.StatusNotFound, "unknown_run"},
			{"/api/v1/jobs/runner/runs?limit=0", http.StatusBadRequest, "bad_limit"},
			{"/api/v1/jobs/runner/runs?limit=1001", http.StatusBadRequest, "bad_limit"},
			{"/api/v1/jobs/runner/runs?limit=ten", http.StatusBadRequest, "bad_limit"},
			{"/api/v1/jobs?limit=0", http.StatusBadRequest, "bad_limit"},
			{"/api/v1/jobs?limit=-1", http.StatusBadRequest, "bad_limit"},
		} {
			if p := getPage(t, r.url, tc.path, "name"); p.status != tc.status || p.code != tc.code {
				t.Errorf("GET %s: %d %q, want %d %q", tc.path, p.status, p.code, tc.status, tc.code)
			}
		}
	})
}
