package worker

import (
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// startRetry spaces the tries of a waiting run that etcd failed (its
// claim, the read of its spec, the record of its skip): 1s at first, as a
// waiting run's other wakes (a slot or queue change) come sooner anyway; up
// to 4s while etcd keeps failing, short beside a starting deadline; half of
// each delay random, so the runs a fault failed together do not all claim
// again at once.
var startRetry = backoff.Policy{Min: time.Second, Max: 4 * time.Second, Jitter: 0.5}

// failed counts one more try of the run that etcd failed and returns when
// to try again.
func (st *waitState) failed(now time.Time) time.Time {
	st.failures++
	return now.Add(startRetry.Delay(st.failures))
}
