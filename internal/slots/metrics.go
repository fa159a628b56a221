package slots

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the semaphore. Slot occupancy comes from the watch-maintained
// view, so it is the cluster-wide count and every replica reports the same
// value: aggregate across replicas with max, not sum.
//
// Resources get their own gauge rather than a job="resource:<name>" value:
// the job label then always names a job, so sum by (job) and joins with
// runs_total{job} stay meaningful.
type metrics struct {
	// teamOf names a job's team (docs/teams.md): the job gauge's team
	// label, "" for a job of the main file or none known.
	teamOf        func(job string) string
	jobInUse      *prometheus.GaugeVec
	resourceInUse *prometheus.GaugeVec
	claimDuration prometheus.Histogram
	// inUse are the gauges setInUse moved, by kind and name, with the
	// team each job's was made for: the view moves one per slot event,
	// and finding it by its labels each time (hashing them) was ~2 % of a
	// replica's CPU at 2,000 runs a second. Guarded by the semaphore's lock.
	inUse map[group]teamGauge
}

// teamGauge is a job's or a resource's gauge of slots in use.
type teamGauge struct {
	team  string
	gauge prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		teamOf: func(string) string { return "" },
		inUse:  map[group]teamGauge{},
		jobInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scheduler_slots_in_use",
			Help: "Job slots held across the cluster, as seen by this replica's watch.",
		}, []string{"job", "team"}),
		resourceInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "scheduler_resource_slots_in_use",
			Help: "Shared-resource slots held across the cluster, as seen by this replica's watch.",
		}, []string{"resource"}),
		claimDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_claim_duration_seconds",
			Help:    "Time a slot claim took, from the first transaction to its outcome, retries and read-backs included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5ms .. ~4s
		}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.jobInUse, m.resourceInUse, m.claimDuration} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// setInUse sets the gauge of kind's name to n. A job's team is looked up
// each time, so a job that moves to another team moves to its series
// (the old one keeps its last value, as before the gauges were kept).
func (m *metrics) setInUse(kind Kind, name string, n int) {
	g := group{kind, name}
	tg, ok := m.inUse[g]
	switch {
	case kind == ResourceSlot && !ok:
		tg = teamGauge{gauge: m.resourceInUse.WithLabelValues(name)}
		m.inUse[g] = tg
	case kind != ResourceSlot:
		if team := m.teamOf(name); !ok || team != tg.team {
			tg = teamGauge{team: team, gauge: m.jobInUse.WithLabelValues(name, team)}
			m.inUse[g] = tg
		}
	}
	tg.gauge.Set(float64(n))
}
