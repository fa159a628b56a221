package fault

import (
	"slices"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/test/cluster"
)

// holder picks a replica other than the leader that holds a slot,
// preferring one whose long run (longer than the TTL) the witness saw
// start within the last TTL/2 and still in its handler, so that freezing
// it makes its lease expire while its run is still there. Any slot
// holder, or any non-leader, when none shows up in time. It returns the
// leader as last seen too: over the wait leadership may move, and a fault
// on the leader is a failover window.
//
// The wait covers about four cycles of the long job (a 3×TTL run, then the
// next tick): each cycle's run lands on a non-leader about two times in
// three, so the fallback is rare. Only a fresh long run can outlive the
// lease; a fault that misses one tests little, and the positive control
// needs at least one to show its overlap. The witness, not the slot's
// started_at, says a run started: a run claimed ahead of its instant
// holds its slot before it starts, and freezing its holder then froze a
// run that never reached the target (the control found no overlap in
// four rounds of six on 2026-11-30).
func (r *runner) holder() (h, leader *cluster.Replica) {
	var fresh, any *cluster.Replica
	within := 12 * r.sc.ttl
	long := "long"
	if r.sc.lean {
		long = "slow" // its 2.5 s run outlives a frozen holder's lease of 2 s
	}
	poll.Within(within, func() bool {
		leader, any = r.leader(), nil
		if fresh = r.c.Replica(r.inHandler(long, leader.ID)); fresh != nil {
			return true
		}
		held, ok := r.heldSlots()
		if !ok {
			return false
		}
		for _, s := range held {
			if s.Job != "" && s.Holder != leader.ID {
				any = r.c.Replica(s.Holder)
				break
			}
		}
		return false
	})
	switch {
	case fresh != nil:
		return fresh, leader
	case any != nil:
		r.t.Logf("no fresh long run on a non-leader within %s: freezing %s, which holds another slot", within, any.ID)
		return any, leader
	}
	r.t.Logf("no slot held by a non-leader within %s: freezing a random non-leader", within)
	others := slices.DeleteFunc(slices.Clone(r.c.Replicas), func(x *cluster.Replica) bool { return x == leader })
	return others[r.rng.IntN(len(others))], leader
}

// inHandler is the replica, other than leader, whose run of job is in the
// witness's handler (Witness.InFlight) and started within the last TTL/2;
// "" if none.
func (r *runner) inHandler(job, leader string) string {
	for _, x := range r.w.InFlight() {
		if x.Job == job && x.Holder != leader && time.Since(x.Start) < r.sc.ttl/2 {
			return x.Holder
		}
	}
	return ""
}
