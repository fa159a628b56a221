// Package jobstest builds configurations for the engine's tests: a job with
// every default the config loader would give it, a cluster config with
// short session timings, and a schedule that does not tick while a test
// runs (FarTick).
package jobstest

import (
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Config is a cluster config of jobs (each given its defaults) with a 4s
// session TTL and one resource "shared" of limit 2. The guarded window (TTL
// less the margin, 3s) outlasts the stalls of a starved two-core machine
// running the suite under -race; with 2s (a 1.5s window) sessions of live
// replicas expired there and their runs ended lost.
func Config(jobs ...config.Job) *config.Config {
	cfg := &config.Config{}
	cfg.Cluster.SessionTTL = config.Duration(4 * time.Second)
	cfg.Cluster.LeaseMargin = config.Duration(time.Second)
	cfg.Worker.MaxParallel = 64
	cfg.Resources = []config.Resource{{Name: "shared", Limit: 2}}
	for _, j := range jobs {
		cfg.Jobs = append(cfg.Jobs, WithDefaults(j))
	}
	return cfg
}

// WideConfig is Config with a 10s session TTL, for a test whose tick runs
// a hundred shards or more at once. Such a tick loads the process, and the
// etcd embedded in it, enough that beside a busy package (go test -p 2
// runs two) no keepalive was answered for over 3s: the guard ended every
// replica's session within a second and each run in flight ended lost (CI,
// 12-02: three failures in four runs). Beside test/e2e, 10 guard expiries
// and a failure in 9 runs of the two wide tests with 4s; none in 10 with
// 10s. The load then was mostly two tests of commands started by the
// hundred (test/e2e's many-jobs page, cmd/scheduler's killed-process
// shards), load averages of 70-130 on two cores; they call HTTP targets
// since. Tests of losses and handoffs keep Config's 4s.
func WideConfig(jobs ...config.Job) *config.Config {
	cfg := Config(jobs...)
	cfg.Cluster.SessionTTL = config.Duration(10 * time.Second)
	return cfg
}

// WithDefaults fills what a test left unset as the loader would, but with
// a short retry backoff and a long history.
func WithDefaults(j config.Job) config.Job {
	if j.Timezone == "" {
		j.Timezone = "UTC"
	}
	if j.MaxConcurrency == 0 {
		j.MaxConcurrency = 1
	}
	if j.Overlap == "" {
		j.Overlap = config.OverlapSkip
	}
	if j.QueueLimit == 0 {
		j.QueueLimit = 1
	}
	if j.Timeout == 0 {
		j.Timeout = config.Duration(time.Minute)
	}
	if j.CatchUp == "" {
		j.CatchUp = config.CatchUpLatest
	}
	if j.StartingDeadline == 0 {
		j.StartingDeadline = config.Duration(time.Minute)
	}
	if j.HistoryLimit == 0 {
		j.HistoryLimit = 1000
	}
	if j.Retries.Backoff == 0 {
		j.Retries.Backoff = config.Duration(100 * time.Millisecond)
		j.Retries.MaxBackoff = config.Duration(time.Second)
	}
	return j
}

// HTTPJob is a GET of url on schedule that succeeds on 2xx.
func HTTPJob(name, schedule, url string) config.Job {
	return config.Job{Name: name, Schedule: schedule, HTTP: &config.HTTP{Method: "GET", URL: url, SuccessCodes: []string{"2xx"}}}
}

// Job is an HTTP job on schedule whose target nothing listens at
// (127.0.0.1:1), for tests that never let its runs reach a target.
func Job(name, schedule string) config.Job {
	return HTTPJob(name, schedule, "http://127.0.0.1:1/")
}

// FarTick is an hourly cron schedule (six fields, seconds first) whose
// ticks fall half an hour from now, for a job in UTC (the default
// timezone) that must not tick while a test runs. @every 1h and @hourly
// do not do that: they tick on whole hours, so a test run across one
// sees a tick it did not expect (in the worker's tests, a run taken up
// seconds late was recorded missed, superseded by the tick at the hour:
// CI at 16:00 and a race run at 15:00 on 2026-11-30). Make it once per
// test and give every replica the same string: the schedule is part of
// the config hash.
func FarTick(now time.Time) string {
	now = now.UTC()
	return fmt.Sprintf("%d %d * * * *", now.Second(), (now.Minute()+30)%60)
}
