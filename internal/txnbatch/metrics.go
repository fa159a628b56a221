package txnbatch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	members   prometheus.Histogram
	fallbacks prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		members: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "scheduler_txn_batch_members",
			Help:    "Transactions per etcd commit of the group committer (claims, releases, records).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "scheduler_txn_batch_fallbacks_total",
			Help: "Batches etcd refused as a whole, whose members were then sent alone.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	if err := errors.Join(reg.Register(m.members), reg.Register(m.fallbacks)); err != nil {
		return nil, err
	}
	return m, nil
}
