package main

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// A replica whose etcd went away exits on SIGTERM within shutdown_grace +
// 10s (docs/design-edges.md#operating-at-the-edges). Replica b reaches etcd only through a proxy and
// campaigns behind leader a; the proxy then stops passing bytes (a
// partition: connections stay open). etcd's Campaign, cancelled, deletes
// its candidate key under the client's own context, which never ends while
// the connection hangs: unbounded, b's shutdown waited there for minutes.
func TestShutdownWithEtcdUnreachable(t *testing.T) {
	etcd := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, etcd.Endpoints()[0])
	const prefix = "/outage/"
	const grace = 3 * time.Second
	jobs := sleepJob("3s", 60)
	a := startProc(t, "a", writeConfig(t, etcd.Endpoints()[0], prefix, jobs))
	a.waitLeader("a")
	b := startProc(t, "b", writeConfig(t, proxy.Endpoint(), prefix, jobs))
	b.waitLeader("a")

	proxy.Pause()
	signalled := time.Now()
	b.terminate()
	limit := grace + 10*time.Second
	b.waitExit(limit + 20*time.Second)
	if took := b.exitAt.Sub(signalled); took > limit {
		t.Errorf("b exited %s after SIGTERM with etcd unreachable; want within shutdown_grace + 10s = %s", took.Round(time.Millisecond), limit)
	}
}
