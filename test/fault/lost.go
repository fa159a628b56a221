package fault

import (
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// lostClaimLead is how long before its instant a queue path run is claimed
// (the worker's ClaimLead, with room): a replica killed within it holds
// the claim and never starts the run, which is then recorded lost. The
// lean path's claims ahead (up to half a second) carry start marks and
// are not recorded lost when they did not start (docs/protocol.md, "Start
// marks").
const lostClaimLead = 100 * time.Millisecond

// checkLostAfterKill: a lost record says its run may have started, so a
// run scheduled after its holder was killed (and before the holder ran
// again) cannot be recorded lost: it never started, and it is late, or
// missed, not lost. First attempts only: a retry is claimed after the
// attempt before it ended, whenever that was, so its tick's time says
// nothing of when its holder took it (a retry of a tick due just before
// its holder's restart, claimed by the restarted holder and lost in the
// next kill, was reported by FAULT_PROFILE=reload).
func checkLostAfterKill(h *History, r *Report) {
	for id, rec := range h.Records {
		if rec.Outcome != runs.Lost || rec.Attempt > 1 {
			continue
		}
		holder := rec.Holder
		if replica, _, ok := keys.ParseIncarnation(holder); ok {
			holder = replica
		}
		for _, k := range h.Kills {
			if k.Holder != holder {
				continue
			}
			r.LostChecked++
			if rec.ScheduledAt.After(k.From.Add(lostClaimLead)) && rec.ScheduledAt.Before(k.To) {
				r.violate("lost: %s recorded lost, scheduled %s after its holder %s was killed: it cannot have started (%s)",
					id, rec.ScheduledAt.Sub(k.From).Round(time.Millisecond), rec.Holder, rec.Error)
			}
		}
	}
}
