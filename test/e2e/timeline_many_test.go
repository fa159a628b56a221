package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
)

const (
	manyBusy = 60   // jobs that run: more than the timeline's 50 rows
	manyJobs = 1000 // in all; the others never run during the test
)

// manyConfig has manyBusy jobs running every 5s and idle ones ticking
// hourly half an hour from now (jobstest.FarTick: @every 24h ticks at
// midnight UTC, and a run across it had every idle job run once), with no
// catch-up, so they stay without a run. The busy jobs call the test's
// HTTP target (startScheduler's third argument): as commands, sixty
// processes started on one instant every five seconds (each a supervisor,
// docs/design-edges.md) held two cores' load average over 70, and the
// packages go test ran beside this one lost their leases.
func manyConfig() string {
	idle := jobstest.FarTick(time.Now())
	var b strings.Builder
	b.WriteString(`
cluster:
  data_dir: %[2]s
api:
  listen: %[1]s
worker:
  shutdown_grace: 2s
jobs:
`)
	for i := range manyJobs {
		if i < manyBusy {
			fmt.Fprintf(&b, "  - {name: busy-%02d, schedule: \"@every 5s\", http: {url: \"%%[3]s/\"}}\n", i)
		} else {
			fmt.Fprintf(&b, "  - {name: idle-%03d, schedule: %q, catch_up: none, exec: {command: [\"true\"]}}\n", i, idle)
		}
	}
	return b.String()
}

// TestDashboardTimelineManyJobs: with a thousand jobs, sixty of them busy,
// the timeline draws the fifty most recently active, says so, and reads
// run records of none of the idle jobs and of a busy one no more than once
// every five seconds.
func TestDashboardTimelineManyJobs(t *testing.T) {
	ctx := browser(t)
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(target.Close)
	r := startScheduler(t, nil, manyConfig(), target.URL)

	// A listing of this many jobs carries no last_run: ask job by job.
	poll.Until(t, 2*patience, "every busy job has run", func() (bool, string) {
		ran := 0
		for i := range manyBusy {
			if len(runsOf(t, r, fmt.Sprintf("busy-%02d", i))) > 0 {
				ran++
			}
		}
		return ran == manyBusy, fmt.Sprintf("%d of %d busy jobs have a record", ran, manyBusy)
	})

	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	// The page's requests are counted from the browser's resource timing,
	// whose buffer keeps 250 entries unless told otherwise.
	err := chromedp.Do(sctx, chromedp.Navigate("http://"+r.Addr+"/"))
	if err == nil {
		_, err = chromedp.Run(sctx, chromedp.Evaluate[bool](`performance.setResourceTimingBufferSize(1e6), true`))
	}
	if err != nil {
		t.Fatalf("load the page: %v", err)
	}
	// The page reads four jobs' newest runs a poll, and a poll waits for
	// its reads: beside a busy package sixty busy jobs took over a minute.
	waitPageWithin(t, ctx, 3*patience, "see fifty rows and the note", fmt.Sprintf(`document.querySelectorAll('#timeline-svg g.tl-job').length === 50 &&
		document.querySelectorAll('#lateness-charts figure').length === 50 &&
		document.querySelector('#timeline-scope').textContent.includes('only the 50 most recently active of %d')`, manyBusy))

	// Wait until every drawn job has its records (a running bar comes from
	// the slots), then count the reads.
	// A probe that failed on a starved machine (a read of etcd past its
	// 5s bound) is made again two minutes later: wait past one.
	waitPageWithin(t, ctx, 3*patience, "see a finished run on every row", `Array.from(document.querySelectorAll('#timeline-svg g.tl-job')).every((g) => g.querySelector('.tl-bar.succeeded') !== null)`)
	// Reads of one record are the probes of jobs the listing says nothing
	// of; reads of more are a drawn job's history.
	counts := evalString(t, ctx, `(() => {
		const probes = {}, reads = {};
		for (const e of performance.getEntriesByType('resource')) {
			const m = /\/api\/v1\/jobs\/([^/]+)\/runs\?limit=([0-9]+)/.exec(e.name);
			if (!m) continue;
			const into = m[2] === '1' ? probes : reads;
			into[decodeURIComponent(m[1])] = (into[decodeURIComponent(m[1])] || 0) + 1;
		}
		return JSON.stringify({probes, reads, seconds: performance.now() / 1000, selected: document.querySelector('#runs-job').textContent});
	})()`)
	var got struct {
		Probes  map[string]int `json:"probes"`
		N       map[string]int `json:"reads"`
		Seconds float64        `json:"seconds"`
		// The job the runs table shows, which reads its runs every second.
		Selected string `json:"selected"`
	}
	if err := json.Unmarshal([]byte(counts), &got); err != nil {
		t.Fatalf("read the request counts %s: %v", counts, err)
	}
	// A job is read when first drawn, then when its last run changed and
	// five seconds passed: at most once per five seconds, plus the first.
	most := int(got.Seconds/5) + 2
	for job, n := range got.N {
		if !strings.HasPrefix(job, "busy-") {
			t.Errorf("the page read the runs of %s, which never ran", job)
		}
		if n > most && job != got.Selected {
			t.Errorf("the page read the runs of %s %d times in %.1fs; want at most %d", job, n, got.Seconds, most)
		}
	}
	if len(got.N) < 50 {
		t.Errorf("the page read the runs of %d jobs, want at least the 50 it draws", len(got.N))
	}
	// Probes: four a poll at most, each job once in two minutes.
	probes := 0
	for job, n := range got.Probes {
		probes += n
		if n > int(got.Seconds/120)+1 {
			t.Errorf("the page probed %s %d times in %.1fs; want once per 2 minutes", job, n, got.Seconds)
		}
	}
	if limit := 4 * (int(got.Seconds) + 2); probes > limit {
		t.Errorf("the page probed %d jobs in %.1fs; want at most %d", probes, got.Seconds, limit)
	}
	t.Logf("over %.1fs: %d probes; runs read %v", got.Seconds, probes, got.N)
}
