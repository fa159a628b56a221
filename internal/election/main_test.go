package election

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/session"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

const (
	testPrefix = "/scheduler/"
	testTTL    = 2 * time.Second
	testMargin = 500 * time.Millisecond
)

// replica is one scheduler process as far as election goes: its own client,
// session manager and elector.
type replica struct {
	id       string
	client   *clientv3.Client
	sessions *session.Manager
	elector  *Elector
	reg      *prometheus.Registry

	stopElector  context.CancelFunc
	electorDone  chan struct{}
	stopSessions context.CancelFunc
	sessionsDone chan struct{}
}

type replicaOpts struct {
	ttl, margin time.Duration
	logger      *slog.Logger
	clock       clockwork.Clock // the elector's; nil is the real clock
	// sessionClock is the sessions' (their keepalives and deadlines); nil
	// is the real clock. A fake one that does not move holds the
	// keepalives: a session then never learns that its lease went.
	sessionClock clockwork.Clock
}

// startReplica runs a replica until the test ends (or stop). endpoints may
// point at a proxy.
func startReplica(t *testing.T, endpoints []string, id string, lead func(context.Context, Leadership), opts ...replicaOpts) *replica {
	t.Helper()
	o := replicaOpts{ttl: testTTL, margin: testMargin}
	if len(opts) > 0 {
		o = opts[0]
	}
	r := &replica{id: id, client: etcdtest.NewClient(t, endpoints), reg: prometheus.NewRegistry()}
	var err error
	r.sessions, err = session.NewManager(r.client, session.Options{TTL: o.ttl, Margin: o.margin, Logger: o.logger, Clock: o.sessionClock}, r.reg)
	if err != nil {
		t.Fatal(err)
	}
	r.elector, err = New(r.client, r.sessions, Config{Prefix: testPrefix, ID: id, APIAddr: id + ":8080", Logger: o.logger, Clock: o.clock}, r.reg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopSessions := context.WithCancel(context.Background())
	ectx, stopElector := context.WithCancel(context.Background())
	r.stopSessions, r.stopElector = stopSessions, stopElector
	r.sessionsDone, r.electorDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.sessionsDone)
		if err := r.sessions.Run(sctx); err != nil {
			t.Errorf("%s: sessions: %v", id, err)
		}
	}()
	go func() {
		defer close(r.electorDone)
		if err := r.elector.Run(ectx, lead); err != nil {
			t.Errorf("%s: elector: %v", id, err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// stop shuts down in the order of docs/design.md#start-and-stop-order: resign, then revoke.
func (r *replica) stop() {
	r.stopElector()
	<-r.electorDone
	r.stopSessions()
	<-r.sessionsDone
}

// started is one call of a lead function.
type started struct {
	id string
	l  Leadership
	at time.Time
}

// ended is the end of a term as the lead function saw it.
type ended struct {
	id        string
	l         Leadership
	cancelled time.Time // when ctx was done; zero if told to step down
	cause     error
}

// terms records every term of every replica of a test and checks that no
// two lead functions ever run at once.
type terms struct {
	t        *testing.T
	mu       sync.Mutex
	active   map[string]Leadership
	starts   chan started
	ends     chan ended
	stepDown chan struct{}
	check    func(ctx context.Context, l Leadership) error // optional, at start
}

func newTerms(t *testing.T) *terms {
	return &terms{
		t:        t,
		active:   map[string]Leadership{},
		starts:   make(chan started, 1000),
		ends:     make(chan ended, 1000),
		stepDown: make(chan struct{}),
	}
}

func (ts *terms) lead(id string) func(context.Context, Leadership) {
	return func(ctx context.Context, l Leadership) {
		now := time.Now()
		ts.mu.Lock()
		for other, ol := range ts.active {
			ts.t.Errorf("%s leads (rev %d) while %s still leads (rev %d)", id, l.Rev, other, ol.Rev)
		}
		ts.active[id] = l
		ts.mu.Unlock()
		if ts.check != nil {
			// A term that ends while the check reads (a replica stopping
			// at the end of a test) leaves it nothing to judge: its read
			// fails with the term's context.
			if err := ts.check(ctx, l); err != nil && ctx.Err() == nil {
				ts.t.Errorf("%s: %v", id, err)
			}
		}
		ts.starts <- started{id: id, l: l, at: now}
		e := ended{id: id, l: l}
		select {
		case <-ctx.Done():
			e.cancelled, e.cause = time.Now(), context.Cause(ctx)
		case <-ts.stepDown:
		}
		ts.mu.Lock()
		delete(ts.active, id)
		ts.mu.Unlock()
		ts.ends <- e
	}
}

// leaderAndStandby starts replica leader, waits for its term, then starts
// replica standby behind it.
func (ts *terms) leaderAndStandby(cluster *etcdtest.Cluster, leader, standby string) (*replica, *replica) {
	ts.t.Helper()
	l := startReplica(ts.t, cluster.Endpoints(), leader, ts.lead(leader))
	ts.nextStart(20 * time.Second)
	return l, startReplica(ts.t, cluster.Endpoints(), standby, ts.lead(standby))
}

func (ts *terms) nextStart(within time.Duration) started {
	ts.t.Helper()
	return receive(ts.t, ts.starts, within, "no leader")
}

func (ts *terms) nextEnd(within time.Duration) ended {
	ts.t.Helper()
	return receive(ts.t, ts.ends, within, "no term ended")
}

// receive is the next value of ch; past within the test fails with
// "<none> within <within>".
func receive[T any](t *testing.T, ch <-chan T, within time.Duration, none string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("%s within %s", none, within)
		var zero T
		return zero
	}
}

// electionKeys lists the election keys, oldest first.
func electionKeys(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, electionPrefix(testPrefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}
