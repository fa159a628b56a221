package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/poll"
)

// TestRecipeWithoutContainers runs deploy/README.md's "Without containers"
// as written there: one `scheduler etcd`, three `scheduler run` against it,
// then `members` and `trigger --wait`. The commands are read from the
// README; only its loopback ports and the config's path are replaced, so
// the recipe cannot drift from what this test shows to work.
func TestRecipeWithoutContainers(t *testing.T) {
	bin := schedulerBinary(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmds := recipeCommands(t, filepath.Join(root, "deploy", "README.md"))
	var verbs []string
	for _, c := range cmds {
		verbs = append(verbs, c[0])
	}
	if want := []string{"etcd", "run", "run", "run", "members", "trigger"}; !slices.Equal(verbs, want) {
		t.Fatalf("deploy/README.md's recipe runs scheduler %v; this test follows %v: update both together", verbs, want)
	}

	etcdAddr := freeAddr(t)
	apiAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	local := strings.NewReplacer(
		"127.0.0.1:2379", etcdAddr,
		"127.0.0.1:8080", apiAddrs[0], "127.0.0.1:8081", apiAddrs[1], "127.0.0.1:8082", apiAddrs[2],
		"config/example.yaml", filepath.Join(root, "config", "example.yaml"))
	for _, c := range cmds {
		for i := range c {
			c[i] = local.Replace(c[i])
		}
	}
	dir := t.TempDir() // the working directory: etcd-data lands here

	etcd := spawn(t, dir, etcdAddr, bin, cmds[0]...)
	etcd.waitEtcd(t)
	var replicas []*replica
	for i, args := range cmds[1:4] {
		r := spawn(t, dir, apiAddrs[i], bin, args...)
		r.waitReady(t)
		replicas = append(replicas, r)
	}
	checkOneCluster(t, replicas, "http://"+etcdAddr)

	for _, args := range cmds[4:] {
		out := runClient(t, dir, "http://"+apiAddrs[0], bin, args...)
		if args[0] == "members" {
			for _, id := range []string{"replica-1", "replica-2", "replica-3"} {
				if !strings.Contains(out, id) {
					t.Errorf("scheduler members does not list %s:\n%s", id, out)
				}
			}
		}
		if args[0] == "trigger" {
			checkRan(t, replicas[1], args[1], []string{"replica-1", "replica-2", "replica-3"})
		}
	}

	// The replicas first, in parallel (each may wait for a run to end),
	// then etcd, as the README says; each must exit 0.
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() { r.Stop(t) })
	}
	wg.Wait()
	etcd.Stop(t)
}

// recipeCommands reads the "./scheduler ..." lines of the README's
// "Without containers" section, as argument lists without the program.
func recipeCommands(t *testing.T, readme string) [][]string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Without containers\n")
	if !ok {
		t.Fatalf("%s: no section \"## Without containers\"", readme)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds [][]string
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "./scheduler "); ok {
			cmds = append(cmds, strings.Fields(rest))
		}
	}
	return cmds
}

// waitEtcd waits until the etcd at r.Addr answers /health with 200.
func (r *replica) waitEtcd(t *testing.T) {
	t.Helper()
	poll.Until(t, patience, "etcd healthy at "+r.Addr, func() (bool, string) {
		select {
		case <-r.done:
			t.Fatalf("scheduler etcd exited before it was healthy: %v", r.err)
		default:
		}
		code, body, err := r.get(context.Background(), "/health", "")
		return err == nil && code == http.StatusOK, fmt.Sprint(code, body, err)
	})
}

// checkOneCluster waits until every replica lists the same three members,
// one of them leading, and names that one as the leader; each must use the
// shared etcd, not an embedded one.
func checkOneCluster(t *testing.T, replicas []*replica, etcdURL string) {
	t.Helper()
	ctx := context.Background()
	for _, r := range replicas {
		c := r.api(t)
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.EmbeddedEtcd || !slices.Equal(st.EtcdEndpoints, []string{etcdURL}) {
			t.Errorf("replica %s: embedded etcd %v, endpoints %v; want the shared etcd %s", st.ID, st.EmbeddedEtcd, st.EtcdEndpoints, etcdURL)
		}
		poll.Until(t, patience, "three members and one leader seen from "+r.Addr, func() (bool, string) {
			members, err := c.Members(ctx)
			if err != nil {
				return false, err.Error()
			}
			leader, err := c.Leader(ctx)
			if err != nil {
				return false, err.Error()
			}
			var ids, leading []string
			for _, m := range members {
				ids = append(ids, m.ID)
				if m.IsLeader {
					leading = append(leading, m.ID)
				}
			}
			slices.Sort(ids)
			ok := slices.Equal(ids, []string{"replica-1", "replica-2", "replica-3"}) &&
				len(leading) == 1 && leader.ID == leading[0]
			return ok, fmt.Sprintf("members %v, leading %v, leader %q", ids, leading, leader.ID)
		})
	}
}

// runClient runs a client command of the recipe against server (the
// README's default server, 127.0.0.1:8080, moved to the test's port) and
// returns its output; it must exit 0.
func runClient(t *testing.T, dir, server, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SCHEDULER_SERVER="+server)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scheduler %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkRan says whether a run of job succeeded on one of the replicas.
func checkRan(t *testing.T, r *replica, job string, ids []string) {
	t.Helper()
	runs, err := r.api(t).Runs(context.Background(), job, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		if run.Outcome == client.OutcomeSucceeded && slices.Contains(ids, run.Holder) {
			return
		}
	}
	t.Errorf("no run of %s succeeded on %v: %+v", job, ids, runs)
}
