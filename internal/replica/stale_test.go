package replica

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// With etcd unreachable (a partition: the proxy passes no bytes), the reads
// that depend on this replica's view answer 503 etcd_unavailable within
// the session's TTL instead of naming a dead leader and its slots (docs/design-edges.md#operating-at-the-edges), and answer again once etcd is back.
func TestNoStaleAnswersWithoutEtcd(t *testing.T) {
	etcd := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, etcd.Endpoints()[0])
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	writeFile(t, path, etcdtest.Config(proxy.Endpoint(), "/stale/", `jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    exec:
      command: ["true"]
`))
	r := startReplica(t, "a1", path, noWatch)
	ctx := context.Background()
	reads := map[string]func() error{
		"leader":  func() error { _, err := r.api.Leader(ctx); return err },
		"members": func() error { _, err := r.api.Members(ctx); return err },
		"slots":   func() error { _, err := r.api.Slots(ctx); return err },
		"jobs":    func() error { _, err := r.api.Jobs(ctx); return err },
		"job":     func() error { _, err := r.api.Job(ctx, "echo"); return err },
	}
	for name, read := range reads {
		if err := read(); err != nil {
			t.Fatalf("%s with etcd up: %v", name, err)
		}
	}

	proxy.Pause()
	// The session's guard ends a TTL (2s) minus the margin after the last
	// acknowledged keepalive; give a loaded machine slack.
	for name, read := range reads {
		poll.Until(t, 20*time.Second, name+" to answer etcd_unavailable", func() (bool, string) {
			err := read()
			return client.IsCode(err, "etcd_unavailable"), fmt.Sprint(err)
		})
	}
	proxy.Resume()
	for name, read := range reads {
		poll.Until(t, 30*time.Second, name+" to answer again", func() (bool, string) {
			err := read()
			return err == nil, fmt.Sprint(err)
		})
	}
}
