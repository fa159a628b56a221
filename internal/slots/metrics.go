package slots

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the semaphore. Job slots in use are read from etcd at each
// scrape (Running), so every replica reports the cluster-wide count, the
// same value: aggregate across replicas with max, not sum. No replica
// keeps a view of every job's slots for it (read.go).
//
// Resources get their own gauge rather than a job="resource:<name>" value:
// the job label then always names a job, so sum by (job) and joins with
// runs_total{job} stay meaningful.
type metrics struct {
	jobInUse      *jobsInUse
	resourceInUse *prometheus.GaugeVec
	claimDuration prometheus.Histogram
	// resources are the resource gauges setInUse moved, by name: finding
	// one by its labels on each slot event (hashing them) was ~2 % of a
	// replica's CPU at 2,000 runs a second. Guarded by the semaphore's lock.
	resources map[string]prometheus.Gauge
}

// scrapeRead bounds the read of the held slots a scrape makes; past it
// the counts last read are reported.
const scrapeRead = 2 * time.Second

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		jobInUse:  &jobsInUse{teamOf: func(string) string { return "" }, seen: map[string]int{}},
		resources: map[string]prometheus.Gauge{},
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

// setResourceInUse sets the gauge of resource name to n.
func (m *metrics) setResourceInUse(name string, n int) {
	g, ok := m.resources[name]
	if !ok {
		g = m.resourceInUse.WithLabelValues(name)
		m.resources[name] = g
	}
	g.Set(float64(n))
}

var jobInUseDesc = prometheus.NewDesc("scheduler_slots_in_use",
	"Job slots held across the cluster, as etcd stores them at the scrape.", []string{"job", "team"}, nil)

// jobsInUse is scheduler_slots_in_use: each job's held slots, read at the
// scrape (Semaphore.Running), with the team the job has then
// (docs/teams.md): every configured job (WithJobs) and every job that held
// slots since the replica started, 0 when it holds none.
type jobsInUse struct {
	teamOf  func(job string) string
	jobs    func() []string // the configured jobs (WithJobs), each shown; nil: none
	running func(ctx context.Context) (map[string]int, error)

	mu   sync.Mutex
	seen map[string]int // every job counted so far, by its count last read
}

func (j *jobsInUse) Describe(ch chan<- *prometheus.Desc) { ch <- jobInUseDesc }

// Collect reads the counts; while etcd does not answer within scrapeRead,
// it reports those last read.
func (j *jobsInUse) Collect(ch chan<- prometheus.Metric) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running != nil {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeRead)
		counts, err := j.running(ctx)
		cancel()
		if err == nil {
			for job := range j.seen {
				j.seen[job] = 0
			}
			for job, n := range counts {
				j.seen[job] = n
			}
		}
	}
	if j.jobs != nil {
		for _, job := range j.jobs() {
			if _, ok := j.seen[job]; !ok {
				j.seen[job] = 0
			}
		}
	}
	for job, n := range j.seen {
		ch <- prometheus.MustNewConstMetric(jobInUseDesc, prometheus.GaugeValue, float64(n), job, j.teamOf(job))
	}
}
