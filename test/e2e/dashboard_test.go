package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashboardConfig: "hello" (with a default input) and "long" run only when
// triggered (@manually: no tick at an hour's turn can add a run the test
// did not ask for), "ping" calls the test's own HTTP target every
// few seconds so the page has history to show, and "nightly" starts paused.
const dashboardConfig = embeddedReplica + `worker:
  shutdown_grace: 2s
resources:
  - name: scratch-disk
    limit: 2
jobs:
  - name: hello
    schedule: "@manually"
    input: {customer_id: c-1001}
    exec:
      command: ["sh", "-c", "echo hello from $SCHEDULER_RUN_ID; echo slot $SCHEDULER_SLOT token $SCHEDULER_FENCING_TOKEN"]
  - name: long
    schedule: "@manually"
    resources: [scratch-disk]
    exec:
      command: ["sleep", "300"]
  - name: ping
    schedule: "@every 3s"
    timeout: 5s
    http:
      method: GET
      url: %[3]s/ping
  - name: nightly
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    paused: true
    exec:
      command: ["date", "-u"]
`

// startDashboard runs a replica of dashboardConfig whose HTTP job calls a
// target of the test's that answers "pong".
func startDashboard(t *testing.T) *replica {
	t.Helper()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "pong from the test's target")
	}))
	t.Cleanup(target.Close)
	return startScheduler(t, nil, dashboardConfig, target.URL)
}

// TestDashboard drives the page of a real replica in headless Chromium:
// it sees the leader, triggers runs with the page's buttons and watches
// them appear, hold slots, finish and be cancelled, all through the page.
func TestDashboard(t *testing.T) {
	ctx := browser(t)
	r := startDashboard(t)
	id := replicaID(t, r, "")

	// Each step gets the whole patience; on failure the page's text says
	// what the browser saw.
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v\npage text:\n%s", name, err, pageText(ctx))
		}
	}
	until := func(name, js string) {
		t.Helper()
		step(name, pollJS(js))
	}
	click := func(name, css string) {
		t.Helper()
		step(name, chromedp.Click(chromedp.CSS(css)))
	}
	text := func(name, css string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		s, err := textOf(sctx, css)
		if err != nil {
			t.Fatalf("%s: %v\npage text:\n%s", name, err, pageText(ctx))
		}
		return s
	}

	step("load the page", chromedp.Navigate("http://"+r.Addr+"/"))
	until("see the leader", fmt.Sprintf(`document.querySelector('#leader-id').textContent === %s`, jsString(id)))
	until("see the member", fmt.Sprintf(`document.querySelector('#members tr[data-member=%s] .badge.leader') !== null`, jsString(id)))
	until("see the jobs", `document.querySelectorAll('#jobs tbody tr[data-job]').length === 4`)
	until("see nightly paused", `document.querySelector('#jobs tr[data-job="nightly"]').dataset.paused === 'true'`)

	// A long run holds its job slot and a resource slot, with fencing tokens.
	click("trigger long", `button[data-action="trigger"][data-job="long"]`)
	until("see long hold its slots", `(() => {
		const job = document.querySelector('#slots tr[data-slot="job/long/0"] [data-testid="fencing-token"]');
		const res = document.querySelector('#slots tr[data-slot^="resource/scratch-disk/"] [data-testid="fencing-token"]');
		return job !== null && res !== null && /^[1-9][0-9]*$/.test(job.textContent) && job.textContent === res.textContent;
	})()`)
	until("see long running", `document.querySelector('#runs tbody tr[data-job="long"][data-state="running"]') !== null`)

	// The run the issue asks for: press trigger, see it appear and succeed.
	click("trigger hello", `button[data-action="trigger"][data-job="hello"]`)
	const helloDone = `#runs tbody tr[data-job="hello"][data-outcome="succeeded"]`
	until("see hello succeed", fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(helloDone)))
	trigger := text("read hello's trigger", helloDone+` .trigger`)
	output := text("read hello's output", helloDone+` pre.output`)
	input := text("read hello's input", helloDone+` pre.input`)
	if !strings.Contains(input, `"customer_id":"c-1001"`) {
		t.Errorf("hello's run shows input %q, want its default input", input)
	}
	if trigger != "manual" {
		t.Errorf("hello's run shows trigger %q, want manual", trigger)
	}
	if !strings.Contains(output, "hello from hello@manual-") || !strings.Contains(output, "token ") {
		t.Errorf("hello's run shows output %q, want its greeting and fencing token", output)
	}
	until("see hello's last outcome", `document.querySelector('#jobs tr[data-job="hello"] .badge.succeeded') !== null`)
	until("see ping's HTTP runs", `document.querySelector('#jobs tr[data-job="ping"] .badge.succeeded') !== null`)
	screenshot(t, ctx, "dashboard.png")

	// Choose long by clicking its row, then cancel its run from the page.
	click("choose long", `#jobs tr[data-job="long"] td.name`)
	const longRunning = `#runs tbody tr[data-job="long"][data-state="running"]`
	until("see long's running run", fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(longRunning)))
	screenshot(t, ctx, "dashboard-running.png")
	click("cancel long", longRunning+` button[data-action="cancel"]`)
	until("see long cancelled", `document.querySelector('#runs tbody tr[data-job="long"][data-outcome="cancelled"]') !== null`)
	until("see long's slots freed", `document.querySelector('#slots tr[data-slot="job/long/0"]') === null`)

	// Pause and resume through the page's buttons.
	click("pause hello", `button[data-action="pause"][data-job="hello"]`)
	until("see hello paused", `document.querySelector('#jobs tr[data-job="hello"]').dataset.paused === 'true'`)
	click("resume hello", `button[data-action="resume"][data-job="hello"]`)
	until("see hello resumed", `document.querySelector('#jobs tr[data-job="hello"]').dataset.paused === 'false'`)

	// The banner tells when the API goes away.
	r.Stop(t)
	until("see the API unreachable", `!document.querySelector('#banner').hidden`)
}

// pageText is what the page shows, for a failure message.
func pageText(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// replicaID asks the replica who it is, with the bearer token if one is given.
func replicaID(t *testing.T, r *replica, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	code, body, err := r.get(ctx, "/api/v1/status", token)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/v1/status: %d %v %s", code, err, body)
	}
	var st struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.ID == "" {
		t.Fatalf("GET /api/v1/status: no id in %s (%v)", body, err)
	}
	return st.ID
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the whole page: into docs/screenshots with
// UPDATE_SCREENSHOTS=1, into the test's temporary directory otherwise.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	savePNG(t, name, png)
}

// screenshotOf saves the element css selects, as screenshot saves the page.
func screenshotOf(t *testing.T, ctx context.Context, name, css string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("screenshot %s of %s: %v", name, css, err)
	}
	savePNG(t, name, png)
}

func savePNG(t *testing.T, name string, png []byte) {
	t.Helper()
	dir := t.TempDir()
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", file)
}
