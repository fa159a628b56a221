package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// Every event of every watch the client opens is counted once, when it is
// decoded; writes nobody watches are not.
func TestEventCounterCountsEveryWatchEvent(t *testing.T) {
	cluster := etcdtest.Start(t)
	reg := prometheus.NewRegistry()
	count, err := EventCounter(reg, []string{"a", "b"}, firstDir)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{count}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wa := cli.Watch(ctx, "/a/", clientv3.WithPrefix())
	wb := cli.Watch(ctx, "/b/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	<-wb // both watches exist on the one stream once the second is created
	if _, err := cli.Txn(ctx).Then(clientv3.OpPut("/a/1", "x"), clientv3.OpPut("/a/2", "x"), clientv3.OpPut("/a/3", "x"),
		clientv3.OpPut("/b/1", "x"), clientv3.OpPut("/c/1", "x")).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "/a/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	for want, got := 6, 0; got < want; {
		select {
		case resp := <-wa:
			got += len(resp.Events)
		case <-ctx.Done():
			t.Fatalf("%d of %d events of /a/ arrived", got, want)
		}
	}
	if resp := <-wb; len(resp.Events) != 1 {
		t.Fatalf("/b/: %d events, want 1", len(resp.Events))
	}
	want := `# HELP scheduler_watch_events_total Watch events this replica's etcd client decoded, over all its watches, by the kind of their key.
# TYPE scheduler_watch_events_total counter
scheduler_watch_events_total{kind="a"} 6
scheduler_watch_events_total{kind="b"} 1
scheduler_watch_events_total{kind="other"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "scheduler_watch_events_total"); err != nil {
		t.Errorf("after 7 watched events and 1 unwatched write: %v", err)
	}
}

func TestEventCounterRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := EventCounter(reg, nil, firstDir); err != nil {
		t.Fatal(err)
	}
	if _, err := EventCounter(reg, nil, firstDir); err == nil || !strings.Contains(err.Error(), "scheduler_watch_events_total") {
		t.Errorf("second registration: %v", err)
	}
}

// firstDir is a kind of key for the tests: its first directory.
func firstDir(key []byte) string {
	if dir, _, ok := strings.Cut(strings.TrimPrefix(string(key), "/"), "/"); ok {
		return dir
	}
	return "other"
}
