package worker

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/session"
)

// maxAssignedLead is how long before its instant a worker takes up an
// assignment at most, to claim its runs: a burst of runs due on one
// second is claimed before the second, each chunk's transaction in its
// turn, and the runs start on time, instead of etcd applying the claims
// while the runs are due (a thousand runs' claims take etcd a few hundred
// milliseconds on two cores). A claimed run holds its slot from the
// claim; it starts at its instant (execute waits for NotBefore).
const maxAssignedLead = 500 * time.Millisecond

// leadOf is how long before its instant a is taken up: maxAssignedLead,
// but at most a quarter of the time from the instant to each of its jobs'
// next tick, and at least ClaimLead. A later tick is so never claimed
// before the tick before it (whose claim would then find the slot taken
// and skip), and a replica killed holds few runs claimed and not started:
// their slots stay its own until its lease expires, and its job's ticks
// are skipped until then (at half the gap, a SIGKILL of test/bench's
// failover step caught two jobs @every 100ms so, 104 ticks). A job the
// configuration does not have (a spec changed or removed since) gets
// ClaimLead.
func (v *assignedView) leadOf(asg assign.Assignment) time.Duration {
	lead := maxAssignedLead
	cfg := v.config()
	for _, j := range asg.Jobs {
		job := cfg.Job(j.Name)
		if job == nil {
			return v.claimLead
		}
		sched, err := job.ParsedSchedule()
		if err != nil {
			return v.claimLead
		}
		if next := sched.Next(asg.At); !next.IsZero() {
			lead = min(lead, next.Sub(asg.At)/4)
		}
	}
	return max(lead, v.claimLead)
}

// untilDue waits on clock until at; false when ctx or the session ends
// first.
func untilDue(ctx context.Context, clock clockwork.Clock, sess *session.Session, at time.Time) bool {
	d := at.Sub(clock.Now())
	if d <= 0 {
		return true
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	case <-sess.Done():
		return false
	}
}
