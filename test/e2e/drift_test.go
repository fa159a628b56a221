package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// driftConfig's jobs run on schedule %[4]q: jobstest.FarTick, which
// does not tick while the test runs (@every 1h ticks on whole hours).
const driftConfig = `
cluster:
  data_dir: %[2]s
api:
  listen: %[1]s
jobs:
  - name: hello
    schedule: %[4]q
    catch_up: none
    exec:
      command: ["true"]
%[3]s`

// TestDashboardFlagsConfigDrift runs two replicas on one etcd, the second
// with one more job, and expects the page to flag the odd member.
func TestDashboardFlagsConfigDrift(t *testing.T) {
	ctx := browser(t)

	far := jobstest.FarTick(time.Now()) // once: the replicas differ by only-on-b alone
	a := startScheduler(t, []string{"--id", "replica-a"}, driftConfig, "", far)
	endpoints := etcdEndpoints(t, a)
	extra := fmt.Sprintf(`  - name: only-on-b
    schedule: %q
    exec:
      command: ["true"]
`, far)
	startScheduler(t, []string{"--id", "replica-b", "--etcd-endpoints", strings.Join(endpoints, ",")}, driftConfig, extra, far)

	// With two hashes and two members, the leader's is taken as the
	// intended one: exactly the other member is flagged.
	navigate(t, ctx, "http://"+a.Addr+"/")
	waitPage(t, ctx, "wait for the drift flag", `(() => {
		const rows = document.querySelectorAll('#members tbody tr[data-member]');
		const odd = document.querySelectorAll('#members tbody tr.drift');
		const leader = document.querySelector('#leader-id').textContent;
		return rows.length === 2 && odd.length === 1 && odd[0].dataset.member !== leader &&
			!document.querySelector('#drift').hidden;
	})()`)
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

// sharedConfig is one file for every replica: each sets its own address,
// data dir and etcd endpoints by flag. Its job runs on schedule %q
// (jobstest.FarTick).
const sharedConfig = `
jobs:
  - name: hello
    schedule: %q
    catch_up: none
    exec:
      command: ["true"]
`

// TestDashboardNoDriftAcrossListenAddresses starts three replicas from one
// file with their own --listen, --data-dir and etcd endpoints (docs/design-edges.md#what-the-config-hash-covers):
// they publish one config hash and the page shows no drift.
func TestDashboardNoDriftAcrossListenAddresses(t *testing.T) {
	ctx := browser(t)
	bin := schedulerBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(sharedConfig, jobstest.FarTick(time.Now()))), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(id string, more ...string) *replica {
		addr := freeAddr(t)
		flags := append([]string{"--id", id, "--listen", addr, "--data-dir", filepath.Join(dir, id)}, more...)
		// The file by its name in the working directory, as an operator
		// types it (and as the page shows it).
		return runScheduler(t, bin, filepath.Base(file), dir, addr, flags)
	}
	a := start("replica-a")
	endpoints := strings.Join(etcdEndpoints(t, a), ",")
	start("replica-b", "--etcd-endpoints", endpoints)
	start("replica-c", "--etcd-endpoints", endpoints)

	c := a.api(t)
	var hashes map[string]bool
	poll.Until(t, patience, "three members with one config hash", func() (bool, string) {
		ms, err := c.Members(context.Background())
		hashes = map[string]bool{}
		var seen []string
		for _, m := range ms {
			hashes[m.ConfigHash] = true
			seen = append(seen, m.ID+"="+m.ConfigHash)
		}
		return err == nil && len(ms) == 3 && len(hashes) == 1, fmt.Sprint(seen, err)
	})

	navigate(t, ctx, "http://"+a.Addr+"/")
	waitPage(t, ctx, "wait for three members and no drift banner", `(() => {
		const rows = document.querySelectorAll('#members tbody tr[data-member]');
		return rows.length === 3 && document.querySelectorAll('#members tbody tr.drift').length === 0 &&
			document.querySelector('#drift').hidden && document.querySelector('#leader-id').textContent !== '';
	})()`)
	screenshot(t, ctx, "dashboard-no-drift.png")
}
