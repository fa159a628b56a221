package fault

import (
	"time"
)

// Left is an assignment or claim marker of the lean protocol still in etcd
// at the end (docs/protocol.md): Key, and the instant its runs were due;
// or a job or resource slot, and when its run started.
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
// would grow etcd and every leader's scan without bound. A slot is held
// while its run runs, a strict retry's kept slot across its two attempts
// and the backoff between (the workload's starting_deadline, 30 s, is
// above the longest run and backoff): one past the bound takes a place of
// its job or resource for nothing until its holder's session ends, which
// for a live replica is never (a strict retry cancelled, or run afresh
// elsewhere, before its holder gave its kept slot up).
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
			r.violate("leftovers: %s (for %s) is still in etcd %s after; want it deleted within %s",
				l.Key, l.At.Format("15:04:05.000"), h.Now.Sub(l.At).Round(time.Second), bound)
		}
	}
}
