package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
)

// backfillConfig: "daily" runs at midnight, so in a test only backfilled
// and triggered runs show; "fivemin" is paused, so only backfilled runs
// of its last half hour show.
const backfillConfig = embeddedReplica + `jobs:
  - name: daily
    schedule: "0 0 * * *"
    exec:
      command: ["sh", "-c", "sleep 0.2"]
  - name: fivemin
    schedule: "*/5 * * * *"
    paused: true
    exec:
      command: ["true"]
`

// TestDashboardMarksBackfilledRuns: the timeline outlines the bars of
// backfilled runs (class backfill), not a triggered run's, and the legend
// says what the outline means.
func TestDashboardMarksBackfilledRuns(t *testing.T) {
	ctx := browser(t)
	r := startScheduler(t, nil, backfillConfig)
	api := r.api(t)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	var res client.Backfilled
	poll.Until(t, patience, "a backfill of the last three midnights", func() (bool, string) {
		var err error
		res, err = api.Backfill(t.Context(), "daily", day.Add(-72*time.Hour), day.Add(-time.Hour))
		if e, ok := client.AsError(err); ok && e.Status == http.StatusConflict {
			return false, err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, ""
	})
	if len(res.Queued) != 3 {
		t.Fatalf("queued %v, want the last three midnights", res.Queued)
	}
	// The triggered run comes after them: with overlap skip and one slot,
	// triggered while they take turns it would be skipped.
	wctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	for _, id := range res.Queued {
		if _, err := api.Wait(wctx, id, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := api.Trigger(t.Context(), "daily", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Wait(wctx, tr.RunID, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}

	navigate(t, ctx, "http://"+r.Addr+"/")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bars: %s", evalString(t, ctx, `Array.from(document.querySelectorAll('#timeline-svg .tl-bar, #timeline-svg .tl-mark')).map((b) => b.getAttribute('class') + ' ' + b.dataset.runId).join('; ')`))
		}
	})
	waitPage(t, ctx, "see three outlined bars and the triggered run's plain one",
		`document.querySelectorAll('#timeline-svg .tl-bar.succeeded.backfill').length === 3 &&
		 document.querySelectorAll('#timeline-svg .tl-bar.succeeded:not(.backfill)').length === 1`)
	sctx, cancelPage := context.WithTimeout(ctx, patience)
	defer cancelPage()
	// The lateness charts leave backfilled runs out: they start late by
	// design, and a backfill of the last half hour would swamp the chart.
	recent, err := api.Backfill(wctx, "fivemin", time.Now().Add(-30*time.Minute), time.Now().Add(-time.Second))
	if err != nil || len(recent.Queued) < 5 {
		t.Fatalf("backfill of fivemin's last half hour: %+v, %v", recent, err)
	}
	for _, id := range recent.Queued {
		if _, err := api.Wait(wctx, id, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	waitPage(t, ctx, "see fivemin's backfilled runs, and no lateness dot for them",
		`document.querySelectorAll('#timeline-svg .tl-bar.backfill[data-run-id^="fivemin@"]').length === `+fmt.Sprint(len(recent.Queued))+` &&
		 /no started run/.test(document.querySelector('#lateness-charts figure[data-job="fivemin"] figcaption')?.textContent || '')`)

	legend, err := textOf(sctx, ".legend")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(legend, "backfilled run") {
		t.Errorf("the legend reads %q; want it to name backfilled runs", legend)
	}
}
