// Package metrics holds the engine's Prometheus metrics, shared by the
// leader (ticks, lost and missed runs) and the worker (runs, lateness,
// claims), registered once through the replica's Registerer.
package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdsched/scheduler/config"
)

// Reasons of scheduler_runs_skipped_total: what kept a run from starting.
const (
	ReasonOverlap   = "overlap"    // the job's slots (or its key's) were taken
	ReasonQueueFull = "queue_full" // overlap: queue, and queue_limit runs already waited
	ReasonResource  = "resource"   // a resource's slots were taken
	ReasonRate      = "rate"       // a rate window (the job's or a resource's) was full
	ReasonDeadline  = "deadline"   // not started by its starting_deadline
	ReasonMissed    = "missed"     // a tick the leader dropped (catch_up) or found too late
	ReasonPaused    = "paused"     // the job was paused
)

// SkipReasons are every value of the reason label of
// scheduler_runs_skipped_total; its HELP lists them.
var SkipReasons = []string{ReasonOverlap, ReasonQueueFull, ReasonResource, ReasonRate, ReasonDeadline, ReasonMissed, ReasonPaused}

// Results of scheduler_claim_conflicts_total.
const (
	ClaimTaken = "taken" // another worker claimed the run, or it was cancelled or changed
	ClaimFull  = "full"  // a limit the run needs had no room
	ClaimLate  = "late"  // claimed, then given back: it would begin too long after its rate stamp
	// ClaimUntrusted: claimed, then given back unstarted: when it was due,
	// the replica's session could have expired (its guard passed).
	ClaimUntrusted = "untrusted"
)

// Set is the engine's metrics.
type Set struct {
	Runs     JobCounter
	Duration JobHistogram
	Lateness prometheus.Histogram
	// StartMarks is how long after its instant a lean worker's start
	// marks committed: the runs claimed ahead for the instant wait for it.
	StartMarks prometheus.Histogram
	Skipped    JobCounter
	Ticks      prometheus.Counter
	ClaimFails *prometheus.CounterVec
	// Notifications counts deliveries by sink and result (delivered,
	// retried, dropped), on the leader that made them.
	Notifications *prometheus.CounterVec

	teams *teams
}

// New registers the metrics with reg; a nil reg registers nothing (tests).
func New(reg prometheus.Registerer) (*Set, error) {
	t := &teams{}
	m := &Set{
		teams: t,
		Runs: JobCounter{prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_runs_total",
			Help: "Runs finished by this replica (or recorded by it as leader), by job, its team and outcome (" + strings.Join(config.Outcomes, ", ") + ").",
		}, []string{"job", "team", "outcome"}), t},
		Duration: JobHistogram{prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "scheduler_run_duration_seconds",
			Help:    "Time from a run's start to its end, as executed on this replica, by job and its team.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10),
		}, []string{"job", "team"}), t},
		Lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_schedule_lateness_seconds",
			Help:    "Start of a run minus its due time (the tick plus jitter), on this replica.",
			Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30},
		}),
		StartMarks: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_start_mark_seconds",
			Help:    "Time from an instant to the commit of this replica's start marks for the runs it claimed ahead for it, which wait for it to start.",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 2, 16),
		}),
		Skipped: JobCounter{prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_runs_skipped_total",
			Help: "Runs that ended without starting, by job, its team and reason (" + strings.Join(SkipReasons, ", ") + ").",
		}, []string{"job", "team", "reason"}), t},
		Ticks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_ticks_materialized_total",
			Help: "Queue entries this replica created as leader.",
		}),
		ClaimFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_claim_conflicts_total",
			Help: "Claims this replica did not turn into a start, by reason (" + strings.Join([]string{ClaimTaken, ClaimFull, ClaimLate, ClaimUntrusted}, ", ") + ").",
		}, []string{"reason"}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "scheduler_notifications_total",
			Help: "Notification deliveries this replica made as leader, by sink and result (delivered, retried, dropped).",
		}, []string{"sink", "result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.Runs, m.Duration, m.Lateness, m.StartMarks, m.Skipped, m.Ticks, m.ClaimFails, m.Notifications} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// NotStarted counts a run recorded without starting (skipped, missed,
// cancelled while queued) under its outcome and reason.
func (m *Set) NotStarted(job, outcome, reason string) {
	m.Runs.WithLabelValues(job, outcome).Inc()
	m.Skipped.WithLabelValues(job, reason).Inc()
}

// Pending registers scheduler_notifications_pending, read from count (the
// outbox as this replica sees it) at each scrape; a nil reg registers
// nothing.
func Pending(reg prometheus.Registerer, count func() int) error {
	if reg == nil {
		return nil
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "scheduler_notifications_pending",
		Help: "Notifications written and not yet delivered or dropped (the outbox, as this replica sees it).",
	}, func() float64 { return float64(count()) }))
}
