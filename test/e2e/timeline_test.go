package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/wire"
)

// timelineConfig: "quick" succeeds every second, "broken" fails every two,
// and "crowded" runs longer than its interval with overlap: skip, so some
// of its ticks are recorded as skipped.
const timelineConfig = embeddedReplica + `worker:
  shutdown_grace: 2s
jobs:
  - name: quick
    schedule: "@every 1s"
    exec:
      command: ["sh", "-c", "sleep 0.3"]
  - name: broken
    schedule: "@every 2s"
    exec:
      command: ["sh", "-c", "echo broken >&2; exit 3"]
  - name: crowded
    schedule: "@every 1s"
    overlap: skip
    exec:
      command: ["sleep", "2.5"]
`

var timelineJobs = []string{"quick", "broken", "crowded"}

// record is what the test reads of a run record.
type record struct {
	RunID        string `json:"run_id"`
	Outcome      string `json:"outcome"`
	Slot         int    `json:"slot"`
	FencingToken int64  `json:"fencing_token"`
	StartedAt    string `json:"started_at"`
}

// drawn is what the page shows for one run: a bar once it started, a mark
// at its scheduled time otherwise.
func (r record) drawn() string {
	kind := "bar"
	if r.StartedAt == "" {
		kind = "mark"
	}
	return fmt.Sprintf("%s %s slot %d", kind, r.Outcome, r.Slot)
}

// TestDashboardTimeline runs a replica with a succeeding, a failing and an
// overlapping job, freezes them, and expects the page's timeline to draw
// exactly the API's records: one bar per started run on its slot lane with
// its outcome, one mark per skipped tick, the fencing token in a bar's
// tooltip and a lateness chart with a dot per started run.
func TestDashboardTimeline(t *testing.T) {
	ctx := browser(t)
	r := startScheduler(t, nil, timelineConfig)
	pageCtx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := chromedp.Do(pageCtx, chromedp.Navigate("http://"+r.Addr+"/")); err != nil {
		t.Fatalf("load the page: %v", err)
	}

	// Enough history for every kind of mark; more for a screenshot worth
	// reading, where a minute of runs fills a fifth of the 5-minute window.
	want := map[string]int{"quick": 4, "broken": 2, "crowded": 2}
	if updating() {
		want["quick"] = 75
	}
	poll.Until(t, 2*patience+time.Duration(want["quick"])*time.Second, "records of every kind", func() (bool, string) {
		quick, broken, crowded := runsOf(t, r, "quick"), runsOf(t, r, "broken"), runsOf(t, r, "crowded")
		n := func(recs []record, outcome string) int {
			return len(slices.DeleteFunc(slices.Clone(recs), func(x record) bool { return x.Outcome != outcome }))
		}
		ok := n(quick, "succeeded") >= want["quick"] && n(broken, "failed") >= want["broken"] &&
			n(crowded, "skipped") >= want["crowded"] && n(crowded, "succeeded") >= 1
		return ok, fmt.Sprintf("quick %d succeeded, broken %d failed, crowded %d skipped and %d succeeded",
			n(quick, "succeeded"), n(broken, "failed"), n(crowded, "skipped"), n(crowded, "succeeded"))
	})

	if updating() {
		// Taken while the jobs still run, so the running bars show too.
		setWindow(t, ctx, "300000")
		waitPage(t, ctx, "see running bars", `document.querySelector('#timeline-svg .tl-bar.running') !== null`)
		screenshotOf(t, ctx, "timeline.png", "#timeline")
		screenshotOf(t, ctx, "lateness.png", "#lateness")
		setWindow(t, ctx, "3600000")
	}

	// Freeze the history: pause every job and wait for its runs to end.
	for _, job := range timelineJobs {
		post(t, r, "/api/v1/jobs/"+job+"/pause")
	}
	poll.Until(t, patience, "every job paused and idle", func() (bool, string) {
		var jobs []wire.Job
		getJSON(t, r, "/api/v1/jobs", &jobs)
		for _, j := range jobs {
			if !j.Paused || j.Running > 0 || j.Pending > 0 {
				return false, fmt.Sprintf("%+v", j)
			}
		}
		return true, ""
	})

	// The page reads records at its own pace; wait until, job by job, it
	// draws exactly what the API holds. The API is read again on every look,
	// in case a record of the last runs was written after they left their slot.
	var api map[string]map[string]string
	var page map[string]map[string]string
	poll.Until(t, patience, "the timeline drawing the API's records", func() (bool, string) {
		api = map[string]map[string]string{}
		for _, job := range timelineJobs {
			api[job] = map[string]string{}
			for _, rec := range runsOf(t, r, job) {
				api[job][rec.RunID] = rec.drawn()
			}
		}
		page = drawnRuns(t, ctx)
		for _, job := range timelineJobs {
			if d := diff(api[job], page[job]); d != "" {
				return false, job + ": " + d
			}
		}
		return true, ""
	})
	for _, job := range timelineJobs {
		t.Logf("%s: %s", job, countByOutcome(page[job]))
	}

	// The tooltip of a bar names its run's fencing token, from the record.
	// Only a run that started has a bar: on a loaded machine a tick of
	// these jobs may be skipped (its previous run still held the slot).
	for _, job := range []string{"quick", "broken"} {
		recs := slices.DeleteFunc(runsOf(t, r, job), func(x record) bool { return x.StartedAt == "" })
		if len(recs) == 0 {
			t.Fatalf("%s has no run that started", job)
		}
		rec := recs[len(recs)/2]
		title := evalString(t, ctx, fmt.Sprintf(
			`document.querySelector('#timeline-svg g.tl-job[data-job=%s] .tl-bar[data-run-id=%s] > title').textContent`,
			jsString(job), jsString(rec.RunID)))
		if rec.FencingToken == 0 || !strings.Contains(title, fmt.Sprintf("fencing token %d", rec.FencingToken)) ||
			!strings.Contains(title, rec.RunID) {
			t.Errorf("tooltip of %s is %q; want its run id and fencing token %d", rec.RunID, title, rec.FencingToken)
		}
	}

	// The overlapping job's skipped ticks are marks, not bars.
	if n := evalString(t, ctx, `String(document.querySelectorAll('#timeline-svg g.tl-job[data-job="crowded"] circle.tl-mark[data-outcome="skipped"]').length)`); n == "0" {
		t.Errorf("no skipped mark on crowded's row")
	}

	// The lateness chart has a dot per started run, on an axis in ms.
	started := 0
	for _, rec := range runsOf(t, r, "quick") {
		if rec.StartedAt != "" {
			started++
		}
	}
	waitPage(t, ctx, "see quick's lateness dots", fmt.Sprintf(
		`document.querySelectorAll('#lateness-charts figure[data-job="quick"] .lat-dot').length === %d`, started))
	labels := evalString(t, ctx, `Array.from(document.querySelectorAll('#lateness-charts figure[data-job="quick"] .lat-label')).map((e) => e.textContent).join('|')`)
	if !strings.Contains(labels, " ms") {
		t.Errorf("quick's lateness axis labels %q name no ms", labels)
	}
}

func updating() bool { return os.Getenv("UPDATE_SCREENSHOTS") == "1" }

// drawnRuns reads, per job row of the timeline, what each run's element says.
func drawnRuns(t *testing.T, ctx context.Context) map[string]map[string]string {
	t.Helper()
	js := `(() => {
		const out = {};
		for (const g of document.querySelectorAll('#timeline-svg g.tl-job')) {
			const runs = {};
			for (const e of g.querySelectorAll('[data-run-id]')) {
				runs[e.dataset.runId] = e.dataset.kind + ' ' + e.dataset.outcome + ' slot ' + e.dataset.slot;
			}
			out[g.dataset.job] = runs;
		}
		return JSON.stringify(out);
	})()`
	var out map[string]map[string]string
	if err := json.Unmarshal([]byte(evalString(t, ctx, js)), &out); err != nil {
		t.Fatalf("read the timeline: %v", err)
	}
	return out
}

// diff says how got differs from want, briefly; "" when they are equal.
func diff(want, got map[string]string) string {
	var missing, extra, wrong []string
	for id, w := range want {
		if g, ok := got[id]; !ok {
			missing = append(missing, id)
		} else if g != w {
			wrong = append(wrong, fmt.Sprintf("%s drawn as %q, recorded as %q", id, g, w))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra)+len(wrong) == 0 {
		return ""
	}
	return fmt.Sprintf("%d records, %d drawn; not drawn %v; drawn without a record %v; %v",
		len(want), len(got), missing, extra, wrong)
}

func countByOutcome(drawn map[string]string) string {
	n := map[string]int{}
	for _, d := range drawn {
		n[d]++
	}
	return fmt.Sprint(n)
}

// runsOf reads a job's records, as many as the API gives.
func runsOf(t *testing.T, r *replica, job string) []record {
	t.Helper()
	var recs []record
	getJSON(t, r, "/api/v1/jobs/"+job+"/runs?limit=1000", &recs)
	return recs
}

func getJSON(t *testing.T, r *replica, path string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	code, body, err := r.get(ctx, path, "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, code, err, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func post(t *testing.T, r *replica, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", path, res.Status)
	}
}

func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v\npage text:\n%s", js, err, pageText(ctx))
	}
	return s
}

func waitPage(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	waitPageWithin(t, ctx, patience, what, js)
}

// waitPageWithin is waitPage with its own deadline.
func waitPageWithin(t *testing.T, ctx context.Context, within time.Duration, what, js string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	err := chromedp.Do(sctx, chromedp.Poll[chromedp.Void](js,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(within)))
	if err != nil {
		t.Fatalf("%s: %v\npage text:\n%s", what, err, pageText(ctx))
	}
}

// setWindow chooses the timeline's window as an operator would.
func setWindow(t *testing.T, ctx context.Context, ms string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := chromedp.Do(sctx, chromedp.SetValue(chromedp.ID("timeline-window"), ms)); err != nil {
		t.Fatalf("choose the window %s: %v", ms, err)
	}
	evalString(t, ctx, `String(document.getElementById('timeline-window').dispatchEvent(new Event('change')))`)
	waitPage(t, ctx, "see the window "+ms, fmt.Sprintf(`document.getElementById('timeline-window').value === %s`, jsString(ms)))
}
