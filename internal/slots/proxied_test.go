package slots

import (
	"context"
	"log/slog"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/netproxy"
	"github.com/etcdsched/scheduler/internal/session"
)

// proxied is a semaphore whose client reaches etcd through a proxy the
// test can delay (an answer that comes after its caller's deadline), with
// its logs, a session on that client, and a client of its own that
// observes etcd directly.
type proxied struct {
	sem      *Semaphore
	proxy    *netproxy.Proxy
	observer *clientv3.Client
	logs     *logtest.Sink
	sess     *session.Session
	ctx      context.Context
}

func startProxied(t *testing.T) *proxied {
	t.Helper()
	cluster := etcdtest.Start(t)
	p := &proxied{proxy: etcdtest.NewProxy(t, cluster.Endpoints()[0]), observer: cluster.Client(), logs: &logtest.Sink{}}
	cli := etcdtest.NewClient(t, []string{p.proxy.Endpoint()})
	sem, err := New(cli, testLayout, slog.New(slog.NewJSONHandler(p.logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.sem = runSemaphore(t, sem)
	p.sess, p.ctx = sessionFor(t, cli)
	return p
}

// claimEntry puts a pending entry of run j@1 and claims it (one slot).
func (p *proxied) claimEntry(t *testing.T) (h *Held, entry, record string) {
	t.Helper()
	entry, record = testLayout.Entry("j", "j@1"), testLayout.Record("j", "j@1")
	read, err := p.observer.Put(p.ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}
	h, err = p.sem.Claim(p.ctx, p.sess, onEntry(Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}}, entry, read.Header.Revision))
	if err != nil {
		t.Fatal(err)
	}
	return h, entry, record
}
