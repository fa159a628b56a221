package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
)

// outageConfig: the replica reaches etcd only through the test's proxy;
// "long" holds a slot while the link goes away, run only when triggered:
// its schedule %[4]q is jobstest.FarTick, which does not tick while the
// test runs (@every 1h ticks on whole hours).
const outageConfig = `
cluster:
  etcd:
    endpoints: [%[3]q]
    prefix: /outage/
  data_dir: %[2]s
  session_ttl: 2s
  lease_margin: 500ms
api:
  listen: %[1]s
worker:
  shutdown_grace: 2s
jobs:
  - name: long
    schedule: %[4]q
    catch_up: none
    exec:
      command: ["sleep", "300"]
`

// TestDashboardEtcdOutage cuts a real replica's link to etcd (the proxy
// passes no bytes, as in a partition) and expects the page to say etcd is
// unreachable, that who leads is unknown rather than that nobody leads, and
// that the members, slots and jobs it shows are not current; when the link
// returns, the page shows the current view again.
func TestDashboardEtcdOutage(t *testing.T) {
	ctx := browser(t)
	etcd := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, etcd.Endpoints()[0])
	r := startScheduler(t, nil, outageConfig, proxy.Endpoint(), jobstest.FarTick(time.Now()))
	id := replicaID(t, r, "")

	navigate(t, ctx, "http://"+r.Addr+"/")
	waitPage(t, ctx, "see the leader", fmt.Sprintf(`document.querySelector('#leader-id').textContent === %s`, jsString(id)))
	post(t, r, "/api/v1/jobs/long/trigger")
	waitPage(t, ctx, "see long hold its slot", `document.querySelector('#slots tr[data-slot="job/long/0"]') !== null &&
		document.querySelector('#members tr[data-member]') !== null && document.querySelector('#jobs tr[data-job="long"]') !== null`)
	if s := evalString(t, ctx, `String(document.querySelectorAll('[data-stale]').length)`); s != "0" {
		t.Fatalf("%s sections marked stale with etcd up", s)
	}

	proxy.Pause()
	// The replica notices when its session's guard ends (a TTL after the
	// last acknowledged keepalive); the page on its next poll.
	waitPage(t, ctx, "see etcd unavailable", `(() => {
		const b = document.querySelector('#etcd-down');
		const stale = (id) => document.getElementById(id).dataset.stale === 'true';
		return !b.hidden && b.textContent.includes('etcd unreachable') &&
			stale('members') && stale('slots') && stale('jobs') && stale('timeline') && stale('runs');
	})()`)
	leader := evalString(t, ctx, `document.querySelector('#leader-id').textContent + ' | ' + document.querySelector('#leader-note').textContent`)
	if leader != "unknown (etcd unavailable) | etcd is unreachable from this replica: it cannot tell who leads, nor whether runs are being scheduled." {
		t.Errorf("during the outage the leader card says %q; want that who leads is unknown", leader)
	}
	// What the page last read stays, marked as not current.
	notes := evalString(t, ctx, `['members', 'slots', 'jobs'].map((id) => document.querySelector('#' + id + ' > .note').textContent).join(' | ')`)
	if n := evalString(t, ctx, `String(document.querySelectorAll('#members > .note:not([hidden]), #slots > .note:not([hidden]), #jobs > .note:not([hidden])').length)`); n != "3" {
		t.Errorf("%s of the members, slots and jobs sections say they are not current: %q", n, notes)
	}
	screenshot(t, ctx, "dashboard-etcd-down.png")

	proxy.Resume()
	waitPage(t, ctx, "see the page current again", fmt.Sprintf(`document.querySelector('#etcd-down').hidden &&
		document.querySelectorAll('[data-stale]').length === 0 &&
		document.querySelector('#leader-id').textContent === %s &&
		document.querySelector('#members tr[data-member=%s]') !== null &&
		document.querySelector('#slots > .note').hidden && document.querySelector('#jobs > .note').hidden`, jsString(id), jsString(id)))
}
