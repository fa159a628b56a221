package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etcdsched/scheduler/client"
)

// TestDashboardShowsPauseReason: a job paused through the API with a
// reason and an until shows both in the jobs table, with its next run
// given as the until (docs/design-leader.md#a-pause-ends-at-its-until); the screenshot is of that table (the jobs section).
func TestDashboardShowsPauseReason(t *testing.T) {
	ctx := browser(t)
	r := startDashboard(t)
	const reason = "vendor API maintenance (ticket OPS-4521)"
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Minute)
	pctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if _, err := r.api(t).Pause(pctx, "ping", client.PauseOptions{Reason: reason, Until: until}); err != nil {
		t.Fatal(err)
	}

	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	const cell = `#jobs tr[data-job="ping"] [data-testid="pause"]`
	err := chromedp.Do(sctx,
		chromedp.Navigate("http://"+r.Addr+"/"),
		pollJS(fmt.Sprintf(`(() => {
			const td = document.querySelector(%s);
			return td !== null && td.querySelector('.pause-reason') !== null && /until /.test(td.textContent);
		})()`, jsString(cell))),
	)
	if err != nil {
		t.Fatalf("see ping paused with its reason: %v\npage text:\n%s", err, pageText(ctx))
	}
	shown, err := textOf(sctx, cell)
	if err != nil {
		t.Fatal(err)
	}
	if want := "paused" + reason; len(shown) < len(want) || shown[:len(want)] != want {
		t.Errorf("ping's pause cell reads %q, want it to start with %q", shown, want)
	}
	screenshotOf(t, ctx, "dashboard-paused.png", "section#jobs")
}
