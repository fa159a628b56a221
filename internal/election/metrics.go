package election

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	isLeader prometheus.Gauge
	// changes counts the leaders this replica's observer has seen take
	// office: each time the oldest election key is a different (key, create
	// revision) than the last one seen, including the first leader seen after
	// start. Gaps without a leader are not counted on their own. Every
	// replica counts independently, like etcd's leader_changes_seen_total.
	changes prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "scheduler_is_leader",
			Help: "1 while this replica holds a confirmed leadership, else 0.",
		}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_leader_changes_total",
			Help: "Leader changes this replica observed, counting the first leader it saw.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.isLeader, m.changes} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
