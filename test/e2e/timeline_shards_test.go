package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/etcdsched/scheduler/internal/poll"
)

const shardsConfig = `
cluster:
  data_dir: %[2]s
api:
  listen: %[1]s
worker:
  shutdown_grace: 2s
jobs:
  - name: split
    schedule: "@every 2s"
    shards: 3
    exec:
      command: ["sleep", "0.3"]
`

// The timeline draws each shard run of a sharded job on its shard's lane:
// the bars of shard k share one lane, below shard k-1's, labelled shard k.
func TestDashboardTimelineShardLanes(t *testing.T) {
	ctx := browser(t)
	r := startScheduler(t, nil, shardsConfig)
	poll.Until(t, 2*patience, "two ticks of every shard", func() (bool, string) {
		n := map[string]int{}
		for _, rec := range runsOf(t, r, "split") {
			if rec.StartedAt != "" {
				n[rec.RunID[strings.LastIndexByte(rec.RunID, '#'):]]++
			}
		}
		return n["#0"] >= 2 && n["#1"] >= 2 && n["#2"] >= 2, fmt.Sprint(n)
	})
	pageCtx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := chromedp.Do(pageCtx, chromedp.Navigate("http://"+r.Addr+"/")); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	waitPage(t, ctx, "see bars of shard 2", `document.querySelectorAll('#timeline-svg g.tl-job[data-job="split"] .tl-bar[data-run-id$="#2"]').length >= 2`)
	js := `(() => {
		const ys = {};
		for (const e of document.querySelectorAll('#timeline-svg g.tl-job[data-job="split"] .tl-bar')) {
			const k = e.dataset.runId.slice(e.dataset.runId.lastIndexOf('#') + 1);
			(ys[k] = ys[k] || []).push(Number(e.getAttribute('y')));
		}
		return JSON.stringify(ys);
	})()`
	var ys map[string][]float64
	if err := json.Unmarshal([]byte(evalString(t, ctx, js)), &ys); err != nil {
		t.Fatal(err)
	}
	lane := map[string]float64{}
	for k, list := range ys {
		for _, y := range list {
			if y != list[0] {
				t.Errorf("bars of shard %s on lanes at y %v; want one lane", k, list)
				break
			}
		}
		lane[k] = list[0]
	}
	if !(lane["0"] < lane["1"] && lane["1"] < lane["2"]) {
		t.Errorf("lanes of shards 0, 1, 2 at y %v, %v, %v; want one below the other", lane["0"], lane["1"], lane["2"])
	}
	labels := evalString(t, ctx, `Array.from(document.querySelectorAll('#timeline-labels .tl-lane-label, .tl-lane-label')).map((e) => e.textContent).join('|')`)
	if !strings.Contains(labels, "shard 2") {
		t.Errorf("lane labels %q name no shard 2", labels)
	}
}
