package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const driftConfig = `
cluster:
  data_dir: %[2]s
api:
  listen: %[1]s
jobs:
  - name: hello
    schedule: "@every 1h"
    catch_up: none
    exec:
      command: ["true"]
%[3]s`

// TestDashboardFlagsConfigDrift runs two replicas on one etcd, the second
// with one more job, and expects the page to flag the odd member.
func TestDashboardFlagsConfigDrift(t *testing.T) {
	ctx := browser(t)

	a := startScheduler(t, []string{"--id", "replica-a"}, driftConfig, "")
	endpoints := etcdEndpoints(t, a)
	extra := `  - name: only-on-b
    schedule: "@every 1h"
    exec:
      command: ["true"]
`
	startScheduler(t, []string{"--id", "replica-b", "--etcd-endpoints", strings.Join(endpoints, ",")}, driftConfig, extra)

	sctx, cancel := context.WithTimeout(ctx, 2*patience)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate("http://"+a.Addr+"/"),
		// With two hashes and two members, the leader's is taken as the
		// intended one: exactly the other member is flagged.
		chromedp.Poll[chromedp.Void](`(() => {
			const rows = document.querySelectorAll('#members tbody tr[data-member]');
			const odd = document.querySelectorAll('#members tbody tr.drift');
			const leader = document.querySelector('#leader-id').textContent;
			return rows.length === 2 && odd.length === 1 && odd[0].dataset.member !== leader &&
				!document.querySelector('#drift').hidden;
		})()`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(patience)),
	)
	if err != nil {
		t.Fatalf("wait for the drift flag: %v\npage text:\n%s", err, pageText(ctx))
	}
	screenshot(t, ctx, "dashboard-drift.png")
}

// etcdEndpoints reads the client URLs of a replica's embedded etcd.
func etcdEndpoints(t *testing.T, r *replica) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	st, err := r.api(t).Status(ctx)
	if err != nil {
		t.Fatalf("GET /api/v1/status: %v", err)
	}
	if len(st.EtcdEndpoints) == 0 {
		t.Fatalf("GET /api/v1/status: no etcd_endpoints in %s", st.Raw)
	}
	return st.EtcdEndpoints
}
