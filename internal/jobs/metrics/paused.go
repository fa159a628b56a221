package metrics

import "github.com/prometheus/client_golang/prometheus"

var pausedDesc = prometheus.NewDesc("scheduler_job_paused",
	"1 while the job is paused (through the API or the config file), 0 otherwise; every replica reports every configured job.",
	[]string{"job", "team"}, nil)

// pausedCollector reads the pause state at each scrape, so the gauge is
// never behind a pause, a resume, a pause's until or a reload.
type pausedCollector struct {
	state  func() map[string]bool
	teamOf func(job string) string
}

func (c pausedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pausedDesc }

func (c pausedCollector) Collect(ch chan<- prometheus.Metric) {
	for job, paused := range c.state() {
		v := 0.0
		if paused {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, v, job, c.teamOf(job))
	}
}

// JobPaused registers scheduler_job_paused{job,team}, read from state
// (each configured job's pause, as this replica sees it) at each scrape;
// a nil reg registers nothing.
func (m *Set) JobPaused(reg prometheus.Registerer, state func() map[string]bool) error {
	if reg == nil {
		return nil
	}
	return reg.Register(pausedCollector{state: state, teamOf: m.teams.team})
}
