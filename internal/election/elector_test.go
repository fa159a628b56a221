package election

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// leaderView follows the election prefix with its own client, from before
// the first campaign, and lists the leaders (oldest key) in the order etcd
// had them. It is the independent witness of the handoff test.
type leaderView struct {
	mu      sync.Mutex
	armed   bool // from the first leader until shutdown begins
	empty   []int64
	leaders []Leadership
	done    chan struct{}
}

func watchLeaders(ctx context.Context, cli *clientv3.Client) *leaderView {
	v := &leaderView{done: make(chan struct{})}
	wch := cli.Watch(ctx, electionPrefix(testPrefix), clientv3.WithPrefix(), clientv3.WithRev(1))
	go func() {
		defer close(v.done)
		keys := map[string]int64{} // key -> create revision
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					delete(keys, string(ev.Kv.Key))
				} else {
					keys[string(ev.Kv.Key)] = ev.Kv.CreateRevision
				}
				// Every revision is checked, not just every response.
				v.record(keys, ev.Kv.ModRevision)
			}
		}
	}()
	return v
}

func (v *leaderView) record(keys map[string]int64, rev int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var oldest Leadership
	for k, cr := range keys {
		if oldest.Key == "" || cr < oldest.Rev {
			oldest = Leadership{Key: k, Rev: cr}
		}
	}
	if oldest.Key == "" {
		if v.armed {
			v.empty = append(v.empty, rev)
		}
		return
	}
	if n := len(v.leaders); n == 0 || v.leaders[n-1] != oldest {
		v.leaders = append(v.leaders, oldest)
	}
}

func (v *leaderView) arm(on bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.armed = on
}

func (v *leaderView) snapshot() ([]Leadership, []int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]Leadership(nil), v.leaders...), append([]int64(nil), v.empty...)
}

// Three replicas with their own clients and sessions hand leadership over
// 20 times. The lead functions never overlap, and the terms they were given
// are exactly the leaders an independent watch saw, in the same order, with
// a leader at every revision in between.
func TestOneLeaderThroughHandoffs(t *testing.T) {
	const handoffs = 20
	cluster := etcdtest.Start(t)
	witness := cluster.Client()
	wctx, stopWatch := context.WithCancel(context.Background())
	view := watchLeaders(wctx, witness)
	defer func() { stopWatch(); <-view.done }()

	ts := newTerms(t)
	ts.check = func(ctx context.Context, l Leadership) error {
		resp, err := witness.Get(ctx, electionPrefix(testPrefix), clientv3.WithFirstCreate()...)
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 || string(resp.Kvs[0].Key) != l.Key || resp.Kvs[0].CreateRevision != l.Rev {
			return fmt.Errorf("lead called for %s@%d, etcd's leader is %v", l.Key, l.Rev, resp.Kvs)
		}
		return nil
	}
	var replicas []*replica
	for i := range 3 {
		replicas = append(replicas, startReplica(t, cluster.Endpoints(), fmt.Sprintf("r%d", i), ts.lead(fmt.Sprintf("r%d", i))))
	}

	var given []Leadership
	first := ts.nextStart(20 * time.Second)
	view.arm(true)
	given = append(given, first.l)
	// Let all three queue up, so every handoff goes to a waiting candidate.
	poll.For(t, 20*time.Second, "three election keys", func() bool { return len(electionKeys(t, witness)) == 3 })
	prev := first
	var slowest time.Duration
	for range handoffs {
		asked := time.Now()
		ts.stepDown <- struct{}{}
		next := ts.nextStart(20 * time.Second)
		if next.id == prev.id {
			t.Fatalf("%s stepped down and led again before the queued candidates", prev.id)
		}
		slowest = max(slowest, next.at.Sub(asked))
		given = append(given, next.l)
		prev = next
		// Each resigned replica queues again behind the others.
		poll.For(t, 20*time.Second, "three election keys again", func() bool { return len(electionKeys(t, witness)) == 3 })
	}
	t.Logf("%d handoffs, slowest %s", handoffs, slowest)

	poll.For(t, 20*time.Second, "every leader seen by the view", func() bool { seen, _ := view.snapshot(); return len(seen) >= len(given) })
	view.arm(false)
	seen, empty := view.snapshot()
	if len(empty) > 0 {
		t.Errorf("no leader at revisions %v", empty)
	}
	if len(seen) != len(given) {
		t.Fatalf("watch saw %d leaders, lead was called %d times", len(seen), len(given))
	}
	for i := range given {
		if seen[i].Key != given[i].Key || seen[i].Rev != given[i].Rev {
			t.Errorf("term %d: lead got %s@%d, watch saw %s@%d", i, given[i].Key, given[i].Rev, seen[i].Key, seen[i].Rev)
		}
	}
	leaders := 0
	for _, r := range replicas {
		if r.elector.IsLeader() {
			leaders++
		}
		changes := testutil.ToFloat64(r.elector.metrics.changes)
		t.Logf("%s observed %v leader changes", r.id, changes)
		if changes < 1 || changes > handoffs+1 {
			t.Errorf("%s: leader_changes_total = %v, want 1..%d", r.id, changes, handoffs+1)
		}
	}
	if leaders != 1 {
		t.Errorf("%d replicas report IsLeader", leaders)
	}
}
