package fault

import (
	"time"
)

// Left is an assignment or claim marker of the lean protocol still in etcd
// at the end (docs/protocol.md): Key, and the instant its runs were due.
type Left struct {
	Key string
	At  time.Time
}

// leftSlack is how long past starting_deadline + session_ttl an
// assignment may outlive its instant: its last run's release (or the
// leader's resolution of a dead worker) deletes it.
const leftSlack = 10 * time.Second

// Nothing stranded: an assignment or claim marker whose instant is older
// than the longest job's starting_deadline + session_ttl + leftSlack, plus
// the longest run the workload has (a run holds its assignment until it
// ends), is one nobody will delete: its worker settled its runs without
// cleaning up, or a dead worker's was never resolved. G2 already finds a
// tick of it that was never accounted; this finds the garbage too, which
// would grow etcd and every leader's scan without bound.
func checkLeftovers(h *History, r *Report) {
	var longest time.Duration
	for _, j := range h.Jobs {
		longest = max(longest, j.StartingDeadline)
	}
	bound := longest + h.SessionTTL + leftSlack + h.LongestRun
	n := 0
	for _, l := range h.Left {
		if l.At.Add(bound).After(h.Now) {
			continue
		}
		if n++; n <= 5 {
			r.violate("leftovers: %s (due %s) is still in etcd %s after it was due; want it deleted within %s",
				l.Key, l.At.Format("15:04:05.000"), h.Now.Sub(l.At).Round(time.Second), bound)
		}
	}
}
