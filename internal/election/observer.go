package election

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Leader is the answer of GET /api/v1/leader.
type Leader struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
	// Since is when this replica first saw the leader: the leader record
	// holds no timestamp (SPEC section 4), and etcd keeps none.
	Since time.Time `json:"since"`
	// Revision is the create revision of the leader's election key, the
	// value its writes are fenced with.
	Revision int64 `json:"revision"`
}

// record is the value Campaign writes under the election key.
type record struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
}

// observer follows who leads. It never infers the leader from events: any
// change under the election prefix, and every re-established watch, leads to
// a fresh read of the oldest key, so a missed or compacted event cannot leave
// a wrong answer behind (SPEC rule 8).
type observer struct {
	client  *clientv3.Client
	prefix  string // election prefix, ending in "/"
	clock   clockwork.Clock
	log     *slog.Logger
	metrics *metrics

	mu     sync.Mutex
	synced bool    // a read succeeded and the watch following it is open
	leader *Leader // nil: no leader
	key    string  // leader's election key, with leader.Revision naming the term
}

func newObserver(client *clientv3.Client, prefix string, clock clockwork.Clock, log *slog.Logger, m *metrics) *observer {
	return &observer{client: client, prefix: prefix, clock: clock, log: log, metrics: m}
}

// run keeps the view current until ctx ends.
func (o *observer) run(ctx context.Context) {
	defer o.unsync()
	retry := newRetry()
	for ctx.Err() == nil {
		rev, err := o.read(ctx)
		if err != nil {
			o.unsync()
			if ctx.Err() == nil {
				o.log.Warn("cannot read leader; retrying", "err", err)
				retry.Wait(ctx, o.clock)
			}
			continue
		}
		retry.Reset()
		err = o.follow(ctx, rev+1)
		o.unsync()
		if err != nil && ctx.Err() == nil {
			o.log.Info("election watch closed; re-reading the leader", "err", err)
		}
	}
}

// follow watches the prefix from rev and re-reads the leader after each
// batch of events. It returns when the watch closes (compaction, lost
// connection, cancelled by the server) or ctx ends.
func (o *observer) follow(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range o.client.Watch(wctx, o.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("election: watch %s: %w", o.prefix, err)
		}
		if len(wr.Events) == 0 {
			continue
		}
		if _, err := o.read(ctx); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// read fetches the oldest key under the prefix, which is the leader's, and
// publishes it. It returns the revision it read at.
func (o *observer) read(ctx context.Context) (int64, error) {
	leader, key, rev, err := readLeader(ctx, o.client, o.prefix, o.log)
	if err != nil {
		return 0, err
	}
	o.publish(leader, key)
	return rev, nil
}

func readLeader(ctx context.Context, client *clientv3.Client, prefix string, log *slog.Logger) (*Leader, string, int64, error) {
	resp, err := client.Get(ctx, prefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, "", 0, fmt.Errorf("election: read leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, "", resp.Header.Revision, nil
	}
	kv := resp.Kvs[0]
	return parseLeader(kv, log), string(kv.Key), resp.Header.Revision, nil
}

func parseLeader(kv *mvccpb.KeyValue, log *slog.Logger) *Leader {
	var rec record
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		// Still a leader: its key is the oldest, whatever it wrote.
		log.Warn("leader record is not JSON", "key", string(kv.Key), "err", err)
	}
	return &Leader{ID: rec.ID, APIAddr: rec.APIAddr, Revision: kv.CreateRevision}
}

func (o *observer) publish(leader *Leader, key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = true
	same := leader != nil && o.leader != nil && key == o.key && leader.Revision == o.leader.Revision
	switch {
	case same:
		return
	case leader != nil:
		leader.Since = o.clock.Now()
		o.metrics.changes.Inc()
		o.log.Info("leader observed", "leader", leader.ID, "leader_rev", leader.Revision)
	case o.leader == nil:
		return
	default:
		o.log.Info("no leader")
	}
	o.leader, o.key = leader, key
}

func (o *observer) unsync() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = false
}

// current is the published leader, and whether it can be trusted: false
// while the watch is being re-established.
func (o *observer) current() (*Leader, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.leader == nil {
		return nil, o.synced
	}
	l := *o.leader
	return &l, o.synced
}
