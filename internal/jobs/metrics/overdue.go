package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	overdueDesc = prometheus.NewDesc("scheduler_job_overdue",
		"1 while the job's newest overdue tick (docs/operations.md#overdue) has not succeeded nor a later one, 0 otherwise; every replica reports every job with overdue_after, from etcd.",
		[]string{"job", "team"}, nil)
	lastSuccessDesc = prometheus.NewDesc("scheduler_job_last_success_timestamp_seconds",
		"When the job's last succeeded run ended (Unix seconds), as etcd stores it; absent until one is known.",
		[]string{"job", "team"}, nil)
)

// JobOverdue is what the overdue gauges say of one job: Watched when it
// has overdue_after, Overdue while it is, and when it last succeeded
// (zero: not known).
type JobOverdue struct {
	Watched, Overdue bool
	LastSucceeded    time.Time
}

// overdueCollector reads the jobs' overdue states at each scrape, from
// the view of etcd every replica keeps, so every replica reports the same.
type overdueCollector struct {
	state  func() map[string]JobOverdue
	teamOf func(job string) string
}

func (c overdueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- overdueDesc
	ch <- lastSuccessDesc
}

func (c overdueCollector) Collect(ch chan<- prometheus.Metric) {
	for job, s := range c.state() {
		team := c.teamOf(job)
		if s.Watched {
			v := 0.0
			if s.Overdue {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, v, job, team)
		}
		if !s.LastSucceeded.IsZero() {
			ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue,
				float64(s.LastSucceeded.UnixMilli())/1000, job, team)
		}
	}
}

// JobOverdue registers scheduler_job_overdue{job,team} and
// scheduler_job_last_success_timestamp_seconds{job,team}, read from state
// (each configured job's) at each scrape; a nil reg registers nothing.
func (m *Set) JobOverdue(reg prometheus.Registerer, state func() map[string]JobOverdue) error {
	if reg == nil {
		return nil
	}
	return reg.Register(overdueCollector{state: state, teamOf: m.teams.team})
}
