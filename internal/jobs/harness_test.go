package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/replica"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/watch"
)

const testPrefix = "/sched/"

// node is one replica's scheduling stack in the test process, wired and
// stopped as the binary does it (replica.Node), with its own client.
type node struct {
	*replica.Node
	t      *testing.T
	id     string
	client *clientv3.Client
	engine *jobs.Engine

	mu  sync.Mutex
	cfg *config.Config

	stopped bool
}

func startNode(t *testing.T, endpoints []string, id string, cfg *config.Config) *node {
	t.Helper()
	return startNodeWith(t, endpoints, id, cfg, timing{})
}

// timing overrides the engine's timings; zero keeps its defaults. Reg and
// Log, when set, take the node's metrics and log lines.
type timing struct {
	Lookahead time.Duration
	Reg       prometheus.Registerer
	Log       *slog.Logger
	// CountEvents counts the watch events the node's client decodes into
	// Reg, as a replica process does (scheduler_watch_events_total).
	CountEvents bool
}

// startNodeWith lets a test set the engine's timings.
func startNodeWith(t *testing.T, endpoints []string, id string, cfg *config.Config, tm timing) *node {
	t.Helper()
	cfg.Cluster.Etcd.Prefix = testPrefix
	var dial []grpc.DialOption
	if tm.CountEvents {
		count, err := watch.EventCounter(tm.Reg, keys.Kinds(), keys.New(testPrefix).Kind)
		if err != nil {
			t.Fatal(err)
		}
		dial = append(dial, count)
	}
	cli := etcdtest.NewClientWith(t, endpoints, dial...)
	n := &node{t: t, id: id, client: cli, cfg: cfg}
	logger := tm.Log
	if logger == nil {
		logger = testLogger(t, id)
	}
	var err error
	n.Node, err = replica.NewNode(replica.NodeOptions{
		Client: cli, ID: id, APIAddr: "127.0.0.1:0", Config: n.config, ConfigHash: cfg.Hash(),
		Logger: logger, Reg: tm.Reg, Supervised: true, // etcdtest.Main supervises exec runs
		Lookahead: tm.Lookahead,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.engine = n.Engine
	n.Start()
	t.Cleanup(func() { n.stop(5 * time.Second) })
	return n
}

func (n *node) config() *config.Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cfg
}

func (n *node) setConfig(cfg *config.Config) {
	cfg.Cluster.Etcd.Prefix = testPrefix
	n.mu.Lock()
	n.cfg = cfg
	n.mu.Unlock()
	n.engine.ConfigChanged()
}

// stop shuts the node down gracefully, in the order of docs/design.md#start-and-stop-order.
func (n *node) stop(grace time.Duration) {
	if n.stopped {
		return
	}
	n.stopped = true
	if err := n.Stop(grace); err != nil {
		n.t.Logf("node %s: %v", n.id, err)
	}
}

// crash stops the node without resigning or revoking: its client is closed
// at once, so its lease is left to expire and its slots with it.
func (n *node) crash() {
	if n.stopped {
		return
	}
	n.stopped = true
	_ = n.client.Close()
	_ = n.Stop(10 * time.Second)
	// With its client closed every etcd call of the drain waits out its
	// context, and Stop does not wait that long: the test waits for the
	// drain before it ends, so no goroutine of the node outlives it.
	n.t.Cleanup(func() {
		select {
		case <-n.Engine.Drained():
		case <-time.After(2 * time.Minute):
			n.t.Errorf("node %s: the drain after its crash did not end", n.id)
		}
	})
}

// witness is a real HTTP target that records every request it gets, with
// its own clock, and how many runs of each job overlap.
type witness struct {
	srv *httptest.Server

	mu       sync.Mutex
	hits     []hit
	inFlight map[string]int
	maxSeen  map[string]int
	reached  map[string]string // run id -> holder of its latest request
	changed  chan struct{}
}

type hit struct {
	Job, RunID, Holder string
	ResourceSlots      string
	Attempt, Slot      int
	Token              int64
	Start, End         time.Time
	Scheduled          time.Time
}

// startWitness serves /run?sleep=D: each request is held for D.
func startWitness(t *testing.T) *witness {
	w := &witness{inFlight: map[string]int{}, maxSeen: map[string]int{}, reached: map[string]string{}, changed: make(chan struct{})}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *witness) serve(rw http.ResponseWriter, r *http.Request) {
	h := hit{
		Job:           r.Header.Get("X-Scheduler-Job"),
		RunID:         r.Header.Get("X-Scheduler-Run-Id"),
		Holder:        r.Header.Get("X-Scheduler-Holder"),
		ResourceSlots: r.Header.Get("X-Scheduler-Resource-Slots"),
		Start:         time.Now(),
	}
	h.Attempt, _ = strconv.Atoi(r.Header.Get("X-Scheduler-Attempt"))
	h.Slot, _ = strconv.Atoi(r.Header.Get("X-Scheduler-Slot"))
	h.Token, _ = strconv.ParseInt(r.Header.Get("X-Scheduler-Fencing-Token"), 10, 64)
	h.Scheduled, _ = time.Parse(runs.TimeFormat, r.Header.Get("X-Scheduler-Scheduled-At"))
	w.mu.Lock()
	w.inFlight[h.Job]++
	w.reached[h.RunID] = h.Holder
	w.maxSeen[h.Job] = max(w.maxSeen[h.Job], w.inFlight[h.Job])
	w.signalLocked()
	w.mu.Unlock()

	status := http.StatusOK
	if n, err := strconv.Atoi(r.URL.Query().Get("hold")); err == nil {
		// hold=N: until half a second past the Nth second after the run's
		// scheduled time (its start's when it has none), so the run ends
		// at the same instant however late it started, half a second from
		// any tick (the decisions there may come that late).
		base := h.Scheduled
		if base.IsZero() {
			base = h.Start.Truncate(time.Second)
		}
		r.URL.RawQuery += "&sleep=" + time.Until(base.Add(time.Duration(n)*time.Second+500*time.Millisecond)).String()
	}
	if d, err := time.ParseDuration(r.URL.Query().Get("sleep")); err == nil {
		select {
		case <-time.After(d): // the run's work
		case <-r.Context().Done():
			status = 499
		}
	}
	if c := r.URL.Query().Get("status"); c != "" {
		status, _ = strconv.Atoi(c)
	}
	h.End = time.Now()
	w.mu.Lock()
	w.inFlight[h.Job]--
	w.hits = append(w.hits, h)
	w.signalLocked()
	w.mu.Unlock()
	rw.WriteHeader(status)
	fmt.Fprintf(rw, "ran %s", h.RunID)
}

func (w *witness) signalLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *witness) url(query string) string { return w.srv.URL + "/run?" + query }

// finished returns the completed requests of job, by start time.
func (w *witness) finished(job string) []hit {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []hit
	for _, h := range w.hits {
		if h.Job == job {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// holderOf is the replica whose request for runID reached the witness
// last, "" before any did.
func (w *witness) holderOf(runID string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reached[runID]
}

func (w *witness) maxConcurrent(job string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxSeen[job]
}

// failingTarget is an HTTP target that answers 500 to the requests fails
// picks and 200 to the others.
func failingTarget(t *testing.T, fails func(*http.Request) bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fails(r) {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// records reads every run record of job.
func records(t *testing.T, cli *clientv3.Client, job string) map[string]runs.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]runs.Record{}
	resp, err := cli.Get(ctx, keys.New(testPrefix).JobRuns(job), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		r, err := runs.DecodeRecord(kv.Value)
		if err != nil {
			t.Fatalf("record %s: %v", kv.Key, err)
		}
		out[r.RunID] = r
	}
	return out
}

// awaitRecord waits until job's record of runID is stored and satisfies
// ok (nil: any record), and returns it.
func awaitRecord(t *testing.T, cli *clientv3.Client, job, runID string, ok func(runs.Record) bool) runs.Record {
	t.Helper()
	var rec runs.Record
	poll.Until(t, 60*time.Second, "the record of "+runID, func() (bool, string) {
		r, found := records(t, cli, job)[runID]
		if !found {
			return false, "none yet"
		}
		rec = r
		return ok == nil || ok(r), fmt.Sprintf("attempt %d %s: %s", r.Attempt, r.Outcome, r.Error)
	})
	return rec
}

// held is the slots n's semaphore reads from etcd.
func (n *node) held(t *testing.T) []slots.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	list, err := n.Slots.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// leaderOf returns the node that leads, once exactly one does.
func leaderOf(t *testing.T, nodes []*node) *node {
	t.Helper()
	var ls []*node
	poll.For(t, 30*time.Second, "a leader", func() bool {
		ls = leaders(nodes)
		return len(ls) == 1
	})
	return ls[0]
}

// leaders are those of nodes, not stopped, that hold a term.
func leaders(nodes []*node) []*node {
	var out []*node
	for _, n := range nodes {
		if !n.stopped && n.Elector.IsLeader() {
			out = append(out, n)
		}
	}
	return out
}

// cursor reads job's cursor: the last tick a leader materialized.
func cursor(t *testing.T, cli *clientv3.Client, job string) time.Time {
	t.Helper()
	resp, err := cli.Get(t.Context(), keys.New(testPrefix).Cursor(job))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return time.Time{}
	}
	at, err := queue.DecodeCursor(resp.Kvs[0].Value)
	if err != nil {
		t.Fatalf("cursor of %s: %v", job, err)
	}
	return at
}
