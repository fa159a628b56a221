package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etcdsched/scheduler/internal/poll"
)

// overdueConfig: "backup" fails every tick and is overdue a second after
// each; "report" succeeds and is watched too.
const overdueConfig = embeddedReplica + `jobs:
  - name: backup
    schedule: "@every 2s"
    overdue_after: 1s
    exec:
      command: ["false"]
  - name: report
    schedule: "@every 2s"
    overdue_after: 1m
    exec:
      command: ["true"]
`

// TestOverdueIsShownEverywhere: an overdue job is overdue in the API
// (with its last success, or none), in the gauges of /metrics and on the
// dashboard, through a real replica and a real browser; a job that
// succeeds is none of these and shows when it last succeeded.
func TestOverdueIsShownEverywhere(t *testing.T) {
	ctx := browser(t)
	r := startScheduler(t, nil, overdueConfig)
	c := r.api(t)
	poll.Until(t, patience, "backup overdue, report not, in the API and /metrics", func() (bool, string) {
		actx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		backup, err1 := c.Job(actx, "backup")
		report, err2 := c.Job(actx, "report")
		_, metrics, err3 := r.get(actx, "/metrics", "")
		ok := err1 == nil && err2 == nil && err3 == nil && backup.Overdue && backup.LastSucceededAt.IsZero() &&
			!report.Overdue && !report.LastSucceededAt.IsZero() &&
			strings.Contains(metrics, `scheduler_job_overdue{job="backup",team=""} 1`) &&
			strings.Contains(metrics, `scheduler_job_overdue{job="report",team=""} 0`) &&
			strings.Contains(metrics, `scheduler_job_last_success_timestamp_seconds{job="report",team=""}`)
		return ok, fmt.Sprintf("backup overdue %v since %s (%v), report overdue %v since %s (%v), metrics: %v",
			backup.Overdue, backup.LastSucceededAt, err1, report.Overdue, report.LastSucceededAt, err2, err3)
	})
	sctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate("http://"+r.Addr+"/"),
		pollJS(`(() => {
			const b = document.querySelector('#jobs tr[data-job="backup"]');
			const ok = document.querySelector('#jobs tr[data-job="report"]');
			return b !== null && ok !== null && b.dataset.overdue === 'true' && b.querySelector('.badge.overdue') !== null &&
				ok.dataset.overdue === 'false' && ok.querySelector('.badge.overdue') === null;
		})()`),
	)
	if err != nil {
		t.Fatalf("see backup marked overdue on the dashboard: %v\npage text:\n%s", err, pageText(ctx))
	}
}
