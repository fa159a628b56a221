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

	"github.com/etcdsched/scheduler/internal/watch"
	"github.com/etcdsched/scheduler/internal/wire"
)

// Leader is the answer of GET /api/v1/leader.
type Leader = wire.Leader

// record is the value under the election key: Campaign writes it without
// Since, the winner proclaims it with the time it won. An earlier version
// reads id and api_addr and ignores since.
type record struct {
	ID      string    `json:"id"`
	APIAddr string    `json:"api_addr"`
	Since   time.Time `json:"since,omitzero"`
}

// observer follows who leads. It never infers the leader from events: any
// change under the election prefix, and every watch re-established after a
// compaction, leads to a fresh read of the oldest key, so a missed or
// compacted event cannot leave a wrong answer behind (docs/design.md#the-safety-rules, rule 8). A watch
// that merely closed resumes after the last revision it delivered, which
// misses nothing either.
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
	rev    int64   // the etcd revision the view was read at
}

func newObserver(client *clientv3.Client, prefix string, clock clockwork.Clock, log *slog.Logger, m *metrics) *observer {
	return &observer{client: client, prefix: prefix, clock: clock, log: log, metrics: m}
}

// run keeps the view current until ctx ends.
func (o *observer) run(ctx context.Context) {
	defer o.unsync()
	w := watch.Watch{
		Client:   o.client,
		Prefixes: []string{o.prefix},
		Retry:    etcdRetry,
		Clock:    o.clock,
		// No Logger: the observer says what happens itself (Read, Paused).
	}
	_ = w.Run(ctx, o) // nil: it returns when ctx ends
}

// Read reads the leader for watch.Watch, which follows from the revision
// after the one returned.
func (o *observer) Read(ctx context.Context) (int64, error) {
	rev, err := o.read(ctx)
	if err != nil && ctx.Err() == nil {
		o.log.Warn("cannot read leader; retrying", "err", err)
	}
	return rev, err
}

// Apply re-reads the leader after a batch of events rather than decoding
// them; a failed read makes the watch start over with Read.
func (o *observer) Apply(ctx context.Context, _ string, events []*clientv3.Event, _ int64) error {
	if len(events) == 0 {
		return nil
	}
	_, err := o.read(ctx)
	return err
}

// Paused: while the watch is down, Leader reads etcd instead of trusting
// the view.
func (o *observer) Paused(_ string, err error, reread bool) {
	o.unsync()
	if reread {
		o.log.Info("election watch closed; re-reading the leader", "err", err)
	} else {
		o.log.Info("election watch closed; resuming", "err", err)
	}
}

// Resumed: the watch goes on after the last revision it delivered, so the
// view is as current as before it closed.
func (o *observer) Resumed(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = true
}

// read fetches the oldest key under the prefix, which is the leader's, and
// publishes it. It returns the revision it read at.
func (o *observer) read(ctx context.Context) (int64, error) {
	leader, key, rev, err := readLeader(ctx, o.client, o.prefix, o.log)
	if err != nil {
		return 0, err
	}
	o.publish(leader, key, rev, true)
	return rev, nil
}

// readNow reads etcd while the watch is down, folds the answer into the
// view (it is the newest there is) and returns the view.
func (o *observer) readNow(ctx context.Context) (*Leader, error) {
	leader, key, rev, err := readLeader(ctx, o.client, o.prefix, o.log)
	if err != nil {
		return nil, err
	}
	o.publish(leader, key, rev, false)
	l, _ := o.current()
	return l, nil
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
	return &Leader{ID: rec.ID, APIAddr: rec.APIAddr, Since: rec.Since, Revision: kv.CreateRevision}
}

// publish sets the view read at rev; sync says the watch follows that read.
// A read older than the view is dropped: an answer given from a newer read
// (readNow, while the watch reopened) must not be taken back, as when the
// watch's first read, made before a campaign, lands after a direct read
// that saw the winner.
func (o *observer) publish(leader *Leader, key string, rev int64, sync bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.synced = o.synced || sync
	if rev < o.rev {
		return
	}
	o.rev = rev
	same := leader != nil && o.leader != nil && key == o.key && leader.Revision == o.leader.Revision
	switch {
	case same:
		if !leader.Since.IsZero() {
			// The winner proclaims its win just after its campaign.
			o.leader.Since = leader.Since
		}
		return
	case leader != nil:
		if leader.Since.IsZero() {
			// Not proclaimed yet, or a leader of an earlier version.
			leader.Since = o.clock.Now()
		}
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
