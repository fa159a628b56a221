package leader

import (
	"sync"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// specEntries keeps, by job, an entry made for its current spec: what a
// lean pass needs of it (the spec's ref and key, the op that writes it)
// does not depend on the tick, and making it encodes and hashes the spec
// (a tenth of the leader's allocations in the burst at 1,000 jobs). An
// entry holds while the job's config is the same one (a reload makes new
// ones).
type specEntries struct {
	mu   sync.Mutex
	cfg  *config.Config
	jobs map[string]specEntry
}

type specEntry struct {
	job   *config.Job
	entry *queue.Entry
}

// of is an entry of j's spec under cfg, made for the tick at if there is
// none yet; only its spec's ref, key and op are to be used.
func (s *specEntries) of(cfg *config.Config, j *config.Job, at time.Time) *queue.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg != cfg || s.jobs == nil {
		s.cfg, s.jobs = cfg, map[string]specEntry{}
	}
	if c, ok := s.jobs[j.Name]; ok && c.job == j {
		return c.entry
	}
	e := queue.NewEntry(runs.ID(j.Name, at), j, cfg.Resources, at, at, 1, runs.Schedule)
	s.jobs[j.Name] = specEntry{job: j, entry: e}
	return e
}
