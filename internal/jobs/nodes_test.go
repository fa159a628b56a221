package jobs_test

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The configurations of the engine's tests (jobstest), named here so that
// a test reads as its scenario.
var (
	httpJob   = jobstest.HTTPJob
	idleJob   = jobstest.Job
	newConfig = jobstest.Config
)

// testEtcd is the embedded etcd member a test's nodes share.
type testEtcd struct {
	*etcdtest.Cluster
	t *testing.T
}

// startEtcd runs a member for the life of the test.
func startEtcd(t *testing.T) *testEtcd {
	t.Helper()
	return &testEtcd{Cluster: etcdtest.Start(t), t: t}
}

// node starts replica id on the member with cfg and the engine's own
// timings.
func (e *testEtcd) node(id string, cfg *config.Config) *node {
	e.t.Helper()
	return startNodeWith(e.t, e.Endpoints(), id, cfg, timing{})
}

// leading starts replica id alone with cfg and waits until it leads.
func (e *testEtcd) leading(id string, cfg *config.Config) *node {
	e.t.Helper()
	n := e.node(id, cfg)
	leaderOf(e.t, []*node{n})
	return n
}

// nodeWith starts replica id with the timings tm.
func (e *testEtcd) nodeWith(id string, cfg *config.Config, tm timing) *node {
	e.t.Helper()
	return startNodeWith(e.t, e.Endpoints(), id, cfg, tm)
}

// nodes starts one replica per id, all with cfg, in the order given.
func (e *testEtcd) nodes(cfg *config.Config, ids ...string) []*node {
	e.t.Helper()
	return e.nodesWith(cfg, timing{}, ids...)
}

// nodesWith is nodes with the timings tm.
func (e *testEtcd) nodesWith(cfg *config.Config, tm timing, ids ...string) []*node {
	e.t.Helper()
	var out []*node
	for _, id := range ids {
		out = append(out, e.nodeWith(id, cfg, tm))
	}
	return out
}

// trigger starts a manual run of job on n with input (none when "") and
// returns its run id; the test fails if the engine refuses.
func (n *node) trigger(t *testing.T, job, input string) string {
	t.Helper()
	var req jobs.TriggerRequest
	if input != "" {
		req.Input = []byte(input)
	}
	id, _, err := n.engine.Trigger(t.Context(), job, req)
	if err != nil {
		t.Fatalf("trigger %s: %v", job, err)
	}
	return id
}

// except is nodes without gone.
func except(nodes []*node, gone *node) []*node {
	var out []*node
	for _, n := range nodes {
		if n != gone {
			out = append(out, n)
		}
	}
	return out
}

// byID is the node of nodes named id; the test fails without one.
func byID(t *testing.T, nodes []*node, id string) *node {
	t.Helper()
	for _, n := range nodes {
		if n.id == id {
			return n
		}
	}
	t.Fatalf("no node %q", id)
	return nil
}

// slotOf waits until runID holds a slot in n's view and returns the
// replica holding it and its fencing token.
func slotOf(t *testing.T, n *node, runID string) (holder string, token int64) {
	t.Helper()
	poll.For(t, 30*time.Second, "the run "+runID+" to start", func() bool {
		for _, s := range n.held(t) {
			if s.RunID == runID {
				holder, token = s.Holder, s.FencingToken
				return true
			}
		}
		return false
	})
	return holder, token
}
