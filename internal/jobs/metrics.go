package jobs

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	runs       *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	lateness   prometheus.Histogram
	skipped    *prometheus.CounterVec
	ticks      prometheus.Counter
	claimFails *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_runs_total",
			Help: "Runs finished by this replica (or recorded by it as leader), by job and outcome.",
		}, []string{"job", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_run_duration_seconds",
			Help:    "Time from a run's start to its end, as executed on this replica.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10),
		}, []string{"job"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_schedule_lateness_seconds",
			Help:    "Start of a run minus its due time (the tick plus jitter), on this replica.",
			Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30},
		}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_runs_skipped_total",
			Help: "Ticks that did not run, by job and reason (overlap, queue_full, missed, paused).",
		}, []string{"job", "reason"}),
		ticks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_ticks_materialized_total",
			Help: "Queue entries this replica created as leader.",
		}),
		claimFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_claim_conflicts_total",
			Help: "Claims this replica lost to another worker or found all slots taken.",
		}, []string{"reason"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.runs, m.duration, m.lateness, m.skipped, m.ticks, m.claimFails} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
