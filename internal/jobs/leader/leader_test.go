package leader

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/keys"
)

// newTestLeader is a leader of cfg under prefix, without workers or
// mirrors, holding a term of its own making.
func newTestLeader(tb testing.TB, cli *clientv3.Client, prefix string, cfg *config.Config, clock clockwork.Clock) *leader {
	tb.Helper()
	m, err := metrics.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	layout := keys.New(prefix)
	d := Deps{Client: cli, Keys: layout, Config: func() *config.Config { return cfg }, Clock: clock,
		Paused: pause.NewView(layout, clock), Metrics: m, Finished: NewFinished(), Chunks: shed.NewIndex(layout, nil)}
	d.defaults()
	termKey := layout.Election() + "test"
	put, err := cli.Put(tb.Context(), termKey, "test")
	if err != nil {
		tb.Fatal(err)
	}
	l := newLeader(d, election.Leadership{Key: termKey, Rev: put.Header.Revision})
	l.jobs = map[string]*config.Job{}
	for i := range cfg.Jobs {
		l.jobs[cfg.Jobs[i].Name] = &cfg.Jobs[i]
	}
	return l
}

// leaderOn is a leader of cfg under prefix on an etcd member of its own,
// with the client its writes go through and a fake clock reading start
// (zero: the fake clock's own default time).
func leaderOn(t testing.TB, prefix string, cfg *config.Config, start time.Time) (*leader, *clientv3.Client, *clockwork.FakeClock) {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	clock := clockwork.NewFakeClock()
	if !start.IsZero() {
		clock = clockwork.NewFakeClockAt(start)
	}
	return newTestLeader(t, cli, prefix, cfg, clock), cli, clock
}

// startTerm sets l's lookahead (zero: leaves it) and reads its jobs'
// cursors, as a term begins.
func startTerm(t testing.TB, l *leader, lookahead time.Duration) {
	t.Helper()
	if lookahead != 0 {
		l.d.Lookahead = lookahead
	}
	if err := l.ticks.initCursors(t.Context()); err != nil {
		t.Fatal(err)
	}
}
