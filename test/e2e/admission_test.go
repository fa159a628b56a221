package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/wire"
)

// admissionConfig (docs/design-admission.md): "sync" runs only when triggered, one
// at a time per customer, queueing the others, within its own rate window
// and the shared resource's, its queued run waiting as long as the test;
// "backlog" ticks every 2s behind a run that never ends, so each tick
// waits its second of starting_deadline in the queue and is recorded
// missed.
const admissionConfig = embeddedReplica + `worker:
  shutdown_grace: 2s
resources:
  - name: partner-api
    limit: 3
    rate: {count: 5, per: 1h}
jobs:
  - name: sync
    schedule: "@manually"
    concurrency_key: "{{ .Input.customer_id }}"
    max_concurrency: 1
    overlap: queue
    queue_limit: 2
    starting_deadline: 1h
    rate: {count: 10, per: 1h}
    resources: [partner-api]
    exec:
      command: ["sleep", "300"]
  - name: backlog
    schedule: "@every 2s"
    overlap: queue
    queue_limit: 1
    starting_deadline: 1s
    exec:
      command: ["sleep", "300"]
`

// TestDashboardAdmission drives the admission view of a real replica: two
// customers' keyed runs hold their key's slot and the resource's, a third
// run waits for its key, and the page's held slots, rate windows and
// pending count say exactly what GET /api/v1/slots and /jobs say. A tick
// that waited past its starting_deadline is a missed mark on the timeline.
func TestDashboardAdmission(t *testing.T) {
	ctx := browser(t)
	r := startScheduler(t, nil, admissionConfig)
	for _, customer := range []string{"c-1", "c-2", "c-1"} {
		postJSON(t, r, "/api/v1/jobs/sync/trigger", fmt.Sprintf(`{"input": {"customer_id": %q}}`, customer))
	}
	navigate(t, ctx, "http://"+r.Addr+"/")

	// What the API says, as the page should show it; read again on every
	// look, as the page reads it once a second. The API must first say what
	// the test set up: a slot per customer key, a resource slot per running
	// run, backlog's run, two starts in each window and one run waiting.
	var api, page admissionView
	poll.Until(t, patience, "the page's admission view to match the API's", func() (bool, string) {
		api = apiAdmission(t, r)
		if msg := api.setUp(); msg != "" {
			return false, "API " + fmt.Sprint(api) + ": " + msg
		}
		page = pageAdmission(t, ctx)
		if a, p := fmt.Sprint(api), fmt.Sprint(page); a != p {
			return false, "API " + a + "\npage " + p
		}
		return true, ""
	})
	screenshot(t, ctx, "dashboard-admission.png")

	// Freeze backlog, then expect its missed ticks drawn as marks, run by
	// run as the API records them, beside the bar of its run that holds
	// the slot (it has no record until it ends).
	poll.Until(t, patience, "backlog has missed ticks", func() (bool, string) {
		n := 0
		for _, rec := range runsOf(t, r, "backlog") {
			if rec.Outcome == "missed" {
				n++
			}
		}
		return n >= 2, fmt.Sprintf("%d missed", n)
	})
	post(t, r, "/api/v1/jobs/backlog/pause")
	var want, got map[string]string
	poll.Until(t, patience, "the timeline drawing backlog's records", func() (bool, string) {
		want = map[string]string{}
		for _, rec := range runsOf(t, r, "backlog") {
			want[rec.RunID] = rec.drawn()
		}
		var held []wire.Slot
		getJSON(t, r, "/api/v1/slots", &held)
		for _, s := range held {
			if s.Job == "backlog" {
				want[s.RunID] = fmt.Sprintf("bar running slot %d", s.Slot)
			}
		}
		got = drawnRuns(t, ctx)["backlog"]
		d := diff(want, got)
		return d == "", d
	})
	n := evalString(t, ctx, `String(document.querySelectorAll('#timeline-svg g.tl-job[data-job="backlog"] circle.tl-mark[data-outcome="missed"]').length)`)
	if n == "0" {
		t.Errorf("no missed mark on backlog's row: %s", countByOutcome(got))
	}
	t.Logf("backlog: %s", countByOutcome(got))
}

// admissionView is what the admission part of the page says: held slots
// and rate windows by their row key, and sync's running cell.
type admissionView struct {
	Slots   map[string]string `json:"slots"`
	Windows map[string]string `json:"windows"`
	Sync    string            `json:"sync"`
}

// setUp says what of TestDashboardAdmission's setup the view lacks.
func (v admissionView) setUp() string {
	for _, slot := range []string{"job/sync/c-1/0", "job/sync/c-2/0"} {
		if !strings.HasPrefix(v.Slots[slot], "key ") {
			return "no keyed slot " + slot
		}
	}
	if _, ok := v.Slots["job/backlog/0"]; !ok {
		return "backlog holds no slot"
	}
	if n := len(v.Slots); n != 5 { // two keys, two resource slots, backlog's run
		return fmt.Sprintf("%d slots held, want 5", n)
	}
	for _, w := range []string{"job/sync", "resource/partner-api"} {
		if !strings.HasPrefix(v.Windows[w], "2 / ") {
			return fmt.Sprintf("window %s shows %q, want 2 starts counted", w, v.Windows[w])
		}
	}
	if !strings.HasSuffix(v.Sync, "1 pending") {
		return fmt.Sprintf("sync's running cell %q, want one pending run", v.Sync)
	}
	return ""
}

func apiAdmission(t *testing.T, r *replica) admissionView {
	t.Helper()
	var list []struct {
		Job            string `json:"job"`
		ConcurrencyKey string `json:"concurrency_key"`
		Resource       string `json:"resource"`
		Slot           int    `json:"slot"`
		RunID          string `json:"run_id"`
		Holder         string `json:"holder"`
		FencingToken   int64  `json:"fencing_token"`
		StartedAt      string `json:"started_at"`
		Window         string `json:"window"`
		Count          int    `json:"count"`
		Per            string `json:"per"`
		InUse          int    `json:"in_use"`
		Oldest         string `json:"oldest"`
	}
	getJSON(t, r, "/api/v1/slots", &list)
	v := admissionView{Slots: map[string]string{}, Windows: map[string]string{}}
	for _, s := range list {
		switch {
		case s.Window != "":
			v.Windows[s.Window] = fmt.Sprintf("%d / %d per %s | %s", s.InUse, s.Count, s.Per, s.Oldest)
		case s.Job != "":
			kind, key := "job", "job/"+s.Job
			if s.ConcurrencyKey != "" {
				kind, key = "key "+s.ConcurrencyKey, key+"/"+s.ConcurrencyKey
			}
			v.Slots[fmt.Sprintf("%s/%d", key, s.Slot)] = fmt.Sprintf("%s | %s | %s | %d | %s", kind, s.RunID, s.Holder, s.FencingToken, s.StartedAt)
		default:
			v.Slots[fmt.Sprintf("resource/%s/%d", s.Resource, s.Slot)] = fmt.Sprintf("resource | %s | %s | %d | %s", s.RunID, s.Holder, s.FencingToken, s.StartedAt)
		}
	}
	var jobs []wire.Job
	getJSON(t, r, "/api/v1/jobs", &jobs)
	for _, j := range jobs {
		if j.Name == "sync" {
			v.Sync = fmt.Sprintf("%d / %d", j.Running, j.MaxConcurrency)
			if j.Pending > 0 {
				v.Sync += fmt.Sprintf("%d pending", j.Pending)
			}
		}
	}
	return v
}

func pageAdmission(t *testing.T, ctx context.Context) admissionView {
	t.Helper()
	js := `(() => {
		const v = { slots: {}, windows: {}, sync: '' };
		for (const tr of document.querySelectorAll('#slots tbody tr[data-slot]')) {
			const c = tr.children;
			v.slots[tr.dataset.slot] = [c[0].querySelector('.sub').textContent, c[2].textContent, c[3].textContent,
				c[4].textContent, c[5].title].join(' | ');
		}
		for (const tr of document.querySelectorAll('#windows tbody tr[data-window]')) {
			const c = tr.children;
			v.windows[tr.dataset.window] = c[1].textContent + ' | ' + c[2].title;
		}
		const sync = document.querySelector('#jobs tr[data-job="sync"] [data-testid="running"]');
		v.sync = sync ? sync.textContent : '';
		return JSON.stringify(v);
	})()`
	var v admissionView
	if err := json.Unmarshal([]byte(evalString(t, ctx, js)), &v); err != nil {
		t.Fatalf("read the admission view: %v", err)
	}
	return v
}

func postJSON(t *testing.T, r *replica, path, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.Addr+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST %s %s: %s", path, body, res.Status)
	}
}
