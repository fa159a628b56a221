package jobs_test

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
)

// jobs.New refuses options an engine cannot work with, naming each, and
// timings that do not fit together; it touches nothing before (no etcd
// here: every refusal comes from the options alone).
func TestNewRefuses(t *testing.T) {
	exec, err := target.NewExecutor(target.Options{})
	if err != nil {
		t.Fatal(err)
	}
	valid := func() jobs.Options {
		return jobs.Options{Client: &clientv3.Client{}, Prefix: "/sched/", ID: "a", Sessions: &session.Manager{}, Slots: &slots.Semaphore{},
			Executor: exec, Config: func() *config.Config { return &config.Config{} }}
	}
	for _, tc := range []struct {
		name   string
		change func(*jobs.Options)
		want   []string
	}{
		{"no client", func(o *jobs.Options) { o.Client = nil }, []string{"jobs: Client is required"}},
		{"no sessions", func(o *jobs.Options) { o.Sessions = nil }, []string{"jobs: Sessions is required"}},
		{"no slots", func(o *jobs.Options) { o.Slots = nil }, []string{"jobs: Slots is required"}},
		{"no executor", func(o *jobs.Options) { o.Executor = nil }, []string{"jobs: Executor is required"}},
		{"no config", func(o *jobs.Options) { o.Config = nil }, []string{"jobs: Config is required"}},
		{"no id", func(o *jobs.Options) { o.ID = "" }, []string{"jobs: ID is required"}},
		{"id with a slash", func(o *jobs.Options) { o.ID = "a/b" }, []string{`jobs: ID "a/b" must not contain "/"`}},
		{"prefix without its last slash", func(o *jobs.Options) { o.Prefix = "/sched" },
			[]string{`jobs: Prefix "/sched" must start and end with "/" (cluster.etcd.prefix)`}},
		{"empty prefix", func(o *jobs.Options) { o.Prefix = "" }, []string{`jobs: Prefix "" must start and end with "/"`}},
		{"negative lookahead", func(o *jobs.Options) { o.Lookahead = -time.Second }, []string{"jobs: Lookahead must not be negative, got -1s"}},
		{"lookahead within the claim lead", func(o *jobs.Options) { o.Lookahead = 25 * time.Millisecond },
			[]string{"jobs: Lookahead (25ms) must be longer than the worker's claim lead (25ms): a run's entry must be queued before its worker claims it"}},
		{"every problem at once", func(o *jobs.Options) { o.Client, o.ID = nil, "" }, []string{"jobs: Client is required", "jobs: ID is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			e, err := jobs.New(o)
			if err == nil || e != nil {
				t.Fatalf("New = %v, %v; want an error", e, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New: %v\nwant it to say %q", err, want)
				}
			}
		})
	}
}
