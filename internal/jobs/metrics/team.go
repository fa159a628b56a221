package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// teams tells the team of a job, for the team label of every per-job
// metric, so that alerting rules can route by team (docs/operations.md,
// "One cluster, several teams"). Until SetTeams, every job has none.
type teams struct {
	of atomic.Pointer[func(job string) string]
}

func (t *teams) team(job string) string {
	if f := t.of.Load(); f != nil {
		return (*f)(job)
	}
	return ""
}

// JobCounter is a counter vector labelled job, team, then the rest: its
// WithLabelValues takes the job and the rest, and adds the job's team.
type JobCounter struct {
	*prometheus.CounterVec
	teams *teams
}

// WithLabelValues is the counter of job with the other labels rest.
func (c JobCounter) WithLabelValues(job string, rest ...string) prometheus.Counter {
	return c.CounterVec.WithLabelValues(append([]string{job, c.teams.team(job)}, rest...)...)
}

// JobHistogram is JobCounter's twin for histograms.
type JobHistogram struct {
	*prometheus.HistogramVec
	teams *teams
}

// WithLabelValues is the histogram of job with the other labels rest.
func (h JobHistogram) WithLabelValues(job string, rest ...string) prometheus.Observer {
	return h.HistogramVec.WithLabelValues(append([]string{job, h.teams.team(job)}, rest...)...)
}

// SetTeams makes teamOf the source of the team label; it is asked at
// each count, so a reload that moves a job to another team's file shows
// at once.
func (m *Set) SetTeams(teamOf func(job string) string) { m.teams.of.Store(&teamOf) }

// TeamOf is the team label the metrics give job.
func (m *Set) TeamOf(job string) string { return m.teams.team(job) }
