package config

import (
	"errors"
	"sync"
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// Job returns the job called name, or nil. It is on every run's path (a
// spec's resolution, a claim lead, a lean plan): a scan of 4,000 jobs was
// a tenth of the leading replica's CPU in test/bench's burst at 4,000.
func (c *Config) Job(name string) *Job {
	if i, ok := c.byName[name]; ok && i < len(c.Jobs) && c.Jobs[i].Name == name {
		return &c.Jobs[i]
	}
	for i := range c.Jobs {
		if c.Jobs[i].Name == name {
			return &c.Jobs[i]
		}
	}
	return nil
}

// indexJobs builds the index Job reads first.
func (c *Config) indexJobs() {
	c.byName = make(map[string]int, len(c.Jobs))
	for i := range c.Jobs {
		c.byName[c.Jobs[i].Name] = i
	}
}

// Caches shared by all Jobs. A Job travels as JSON inside queue entries, so
// it carries no parsed state of its own; these keep the dispatch loop from
// reading zone files and parsing cron on every tick. Locations and
// schedules are immutable, so sharing them is safe.
var (
	locations sync.Map // zone name -> *time.Location
	schedules sync.Map // Job.keyOf -> schedule.Schedule
)

// Location returns the job's time zone; UTC when it is empty or cannot be
// loaded (Parse rejects the latter).
func (j *Job) Location() *time.Location {
	name := j.Timezone
	if name == "" || name == "UTC" {
		return time.UTC
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return time.UTC
	}
	locations.Store(name, l)
	return l
}

// ParsedSchedule returns the job's schedule, evaluated in its time zone:
// the union of its schedules, after exclusions, within start_at..end_at.
// Everything that asks for a job's next tick asks this.
func (j *Job) ParsedSchedule() (schedule.Schedule, error) {
	if j.Schedule == "" && len(j.Schedules) == 0 {
		return nil, errors.New("no schedule")
	}
	key := j.keyOf()
	if s, ok := schedules.Load(key); ok {
		return s.(schedule.Schedule), nil
	}
	s, err := j.buildSchedule(j.Location())
	if err != nil {
		return nil, err
	}
	schedules.Store(key, s)
	return s, nil
}

// JitterAt returns the delay added to the job's tick: in [0, jitter) and
// the same on every replica.
func (j *Job) JitterAt(tick time.Time) time.Duration {
	return schedule.Jitter(j.Name, tick, j.Jitter.D())
}

// Delay returns how long to wait before retry number n (1 for the first
// retry): backoff doubled per retry, capped at max_backoff. Exactly: the
// delays are documented, so the policy has no jitter (a job's ticks already
// spread by its own jitter setting).
func (r Retries) Delay(n int) time.Duration {
	return backoff.Policy{Min: r.Backoff.D(), Max: r.MaxBackoff.D()}.Step(n)
}
