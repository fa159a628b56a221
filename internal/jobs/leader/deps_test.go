package leader

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/outbox"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Run refuses settings the leader cannot work with, naming each, before it
// touches etcd (there is none here). Its ctx has ended: past the checks,
// Run would return nil.
func TestRunRefuses(t *testing.T) {
	term := election.Leadership{Key: "/l/election/1", Rev: 7}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	valid := func() Deps {
		layout := keys.New("/l/")
		specs := queue.NewSpecs(layout, nil, nil)
		m, err := metrics.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		return Deps{Client: &clientv3.Client{}, Keys: layout, Config: func() *config.Config { return &config.Config{} },
			ConfigChanged: make(chan struct{}), Queue: queue.NewView(layout, nil, specs), Specs: specs,
			Paused: pause.NewView(layout, clockwork.NewFakeClock()), Slots: &slots.Semaphore{}, Finished: NewFinished(),
			Chunks: shed.NewIndex(layout, nil), Outbox: outbox.NewView(), Metrics: m}
	}
	for _, tc := range []struct {
		name   string
		change func(*Deps, *election.Leadership)
		want   []string
	}{
		{"no client", func(d *Deps, _ *election.Leadership) { d.Client = nil }, []string{"leader: Client is required"}},
		{"no key layout", func(d *Deps, _ *election.Leadership) { d.Keys = keys.Layout{} }, []string{"leader: Keys is required"}},
		{"no config", func(d *Deps, _ *election.Leadership) { d.Config = nil }, []string{"leader: Config is required"}},
		{"no config signal", func(d *Deps, _ *election.Leadership) { d.ConfigChanged = nil }, []string{"leader: ConfigChanged is required"}},
		{"no queue view", func(d *Deps, _ *election.Leadership) { d.Queue = nil }, []string{"leader: Queue is required: the view of queued runs"}},
		{"no specs", func(d *Deps, _ *election.Leadership) { d.Specs = nil }, []string{"leader: Specs is required"}},
		{"no pause view", func(d *Deps, _ *election.Leadership) { d.Paused = nil }, []string{"leader: Paused is required"}},
		{"no slots view", func(d *Deps, _ *election.Leadership) { d.Slots = nil }, []string{"leader: Slots is required"}},
		{"no finished", func(d *Deps, _ *election.Leadership) { d.Finished = nil }, []string{"leader: Finished is required"}},
		{"no chunk index", func(d *Deps, _ *election.Leadership) { d.Chunks = nil }, []string{"leader: Chunks is required"}},
		{"no outbox", func(d *Deps, _ *election.Leadership) { d.Outbox = nil }, []string{"leader: Outbox is required"}},
		{"no metrics", func(d *Deps, _ *election.Leadership) { d.Metrics = nil }, []string{"leader: Metrics is required"}},
		{"no term", func(_ *Deps, l *election.Leadership) { *l = election.Leadership{} },
			[]string{`leader: the term must name its election key and revision (they fence every write), got key "", revision 0`}},
		{"negative lookahead", func(d *Deps, _ *election.Leadership) { d.Lookahead = -time.Second }, []string{"leader: Lookahead must not be negative, got -1s"}},
		{"negative spec grace", func(d *Deps, _ *election.Leadership) { d.SpecGrace = -time.Second }, []string{"leader: SpecGrace must not be negative, got -1s"}},
		{"every problem at once", func(d *Deps, _ *election.Leadership) { d.Queue, d.Lookahead = nil, -time.Second },
			[]string{"leader: Queue is required", "leader: Lookahead must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, l := valid(), term
			tc.change(&d, &l)
			err := Run(ctx, d, l)
			if err == nil {
				t.Fatal("Run = nil, want an error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run: %v\nwant it to say %q", err, want)
				}
			}
		})
	}
	if err := Run(ctx, valid(), term); err != nil {
		t.Fatalf("Run with every setting = %v, want nil", err)
	}
}
