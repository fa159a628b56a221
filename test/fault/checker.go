// Package fault is the fault-injection suite: real etcd members and
// scheduler replicas (test/cluster), faults injected as signals and network
// partitions, and a checker over what an independent witness saw. The
// checker lives outside the _test files so its properties can be read,
// and tested, on their own.
package fault

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// Job is what the checker needs to know of a job's declaration.
type Job struct {
	Name           string
	Every          time.Duration // @every interval
	MaxConcurrency int
	CatchUp        string
	Resources      []string
	// Keyed: the job has a concurrency_key; max_concurrency holds per key.
	Keyed bool
	// StartingDeadline bounds, with the session TTL, how late a tick may
	// be accounted for (G2).
	StartingDeadline time.Duration
}

// Window is an interval of time.
type Window struct{ From, To time.Time }

func (w Window) contains(t time.Time) bool { return !t.Before(w.From) && !t.After(w.To) }

// Freeze: replica Holder was SIGSTOPped during the window.
type Freeze struct {
	Holder string
	Window
}

// Kill: replica Holder was SIGKILLed at From and started again at To.
type Kill struct {
	Holder string
	Window
}

// History is everything the checker looks at.
type History struct {
	Jobs      []Job
	Resources map[string]int  // name -> limit
	Rates     map[string]Rate // resource name -> its rate window
	// Runs as the witness saw them, in arrival order.
	Runs []cluster.Run
	// Records by run id, as last written, those pruned since too
	// (recordlog.go); RecordedAt is when the witness's watch saw each
	// record first written, zero where it was not seen.
	Records    map[string]runs.Record
	RecordedAt map[string]time.Time
	// Writes is how often each record's key was written.
	Writes map[string]int64
	// RecordLog is every write of a record, pruned ones too, and Limits
	// each job's history limits (pruned.go).
	RecordLog []RecordEvent
	Limits    map[string]Limits
	// SessionTTL is the workload's cluster.session_ttl (G2's bound).
	SessionTTL time.Duration
	// Ticks scheduled in [TicksFrom, TicksUntil] must each be accounted for.
	TicksFrom, TicksUntil time.Time
	// Failover are the measured windows without a working leader or store
	// (plus a margin): the only place a tick may be lost.
	Failover []Window
	// EtcdDown are the windows in which no etcd member ran; RunStartGrace
	// is how long after the store went down a run claimed before may still
	// start (the lease guard's deadline).
	EtcdDown      []Window
	RunStartGrace time.Duration
	Freezes       []Freeze
	// Kills are the SIGKILLs of replicas (see lost.go).
	Kills []Kill
	// SlotPeaks from the witness's own etcd watch.
	SlotPeaks map[string]cluster.SlotPeak
	// Healed: every job must have started a run after this.
	Healed time.Time
	// Now ends the runs still in flight.
	Now time.Time
	// Chains and Notify: see chains.go.
	Chains []Chain
	Notify Notify
	// Restarts are the graceful restarts (SIGTERM, exit, start) of a
	// rolling restart or upgrade; see restarts.go.
	Restarts []Restart
	// RequireResumed makes a run cut by a restart that neither ran again
	// nor was recorded interrupted a violation; without it such runs are
	// only reported (Report.Unenforced), until the interrupted outcome
	// exists.
	RequireResumed bool
	// Sharded are the workload's sharded jobs, FanIns their ticks' fan-in
	// keys by tick run id; see shards.go.
	Sharded []Sharded
	FanIns  map[string]FanIn
	// Queued are the run ids with a queue entry at the records' revision
	// (a record beside one is of an attempt a retry follows).
	Queued map[string]bool
	// Left are the lean protocol's assignments and claim markers still in
	// etcd at the end; LongestRun the longest run the workload has.
	Left       []Left
	LongestRun time.Duration
}

// Report is the checker's verdict.
type Report struct {
	RunsChecked int
	Rejected    int // stale tokens refused by the witness
	Superseded  int // runs fenced off by a newer token while frozen
	// CancelledFirst: runs fenced off by a newer token after their holder
	// had cancelled and ended them (see checkSuperseded).
	CancelledFirst int
	ChainRuns      int // downstream runs checked against their upstream
	Notified       int // notifications delivered or still in the outbox
	ExcusedShared  int // shared-resource overlaps caused by a frozen holder
	ExcusedRate    int // starts of a rate-limited resource by a holder frozen just before
	RateWindows    int // intervals with more starts than a window's count
	KeyViolations  int // moments a concurrency key had more runs than max_concurrency
	TicksChecked   int
	ShardTicks     int // ticks of sharded jobs with every shard accounted
	FanIns         int // ticks of sharded jobs fanned in
	FanInsPruned   int // of the fan-ins checked, those the leader deleted since
	TicksLost      int // lost inside failover windows (allowed)
	LostChecked    int // lost records checked against their holder's kills
	Pruned         int // records deleted, each checked against its job's limits
	// TicksAccounted: ticks G2 checked (run or recorded in time).
	TicksAccounted int
	Cuts           CutReport
	Violations     []string
	// Unenforced: what a property found that the scenario reports
	// without failing (see History.RequireResumed).
	Unenforced []string
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// Check runs every property over h.
func Check(h *History) *Report {
	r := &Report{RunsChecked: len(h.Runs)}
	for _, run := range h.Runs {
		if run.Rejected {
			r.Rejected++
		}
		if run.Superseded {
			r.Superseded++
		}
	}
	jobs := map[string]Job{}
	for _, j := range h.Jobs {
		jobs[j.Name] = j
	}
	checkOverlap(h, jobs, r)
	checkSharedResources(h, jobs, r)
	checkRates(h, r)
	checkKeys(h, jobs, r)
	checkSuperseded(h, r)
	checkTwice(h, r)
	checkAfterRecord(h, r)
	checkRecordedOnce(h, r)
	checkTokens(h, r)
	checkTicks(h, jobs, r)
	checkAccounted(h, r)
	checkCuts(h, r)
	checkEtcdDown(h, r)
	checkSlotPeaks(h, jobs, r)
	checkHealed(h, r)
	checkRecords(h, r)
	checkChains(h, r)
	checkNotifications(h, r)
	checkShards(h, r)
	checkLeftovers(h, r)
	checkLostAfterKill(h, r)
	checkPruned(h, r)
	return r
}

type span struct {
	from, to time.Time
	run      *cluster.Run
}

// maxOverlap sweeps spans and calls over for each moment more than limit
// overlap, with the spans active then.
func maxOverlap(spans []span, limit int, over func(at time.Time, active []*cluster.Run)) {
	type edge struct {
		at    time.Time
		start bool
		run   *cluster.Run
	}
	var edges []edge
	for _, s := range spans {
		if !s.to.After(s.from) {
			continue
		}
		edges = append(edges, edge{s.from, true, s.run}, edge{s.to, false, s.run})
	}
	// Ends before starts at the same instant: back-to-back is no overlap.
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return !edges[i].start && edges[j].start
	})
	active := map[*cluster.Run]bool{}
	for _, e := range edges {
		if !e.start {
			delete(active, e.run)
			continue
		}
		active[e.run] = true
		if len(active) > limit {
			var list []*cluster.Run
			for a := range active {
				list = append(list, a)
			}
			over(e.at, list)
		}
	}
}

func accepted(h *History, pred func(*cluster.Run) bool) []span {
	var out []span
	for i := range h.Runs {
		run := &h.Runs[i]
		if run.Rejected || !pred(run) {
			continue
		}
		out = append(out, span{run.Start, run.Until(h.Now), run})
	}
	return out
}

func describe(list []*cluster.Run) string {
	var parts []string
	for _, r := range list {
		parts = append(parts, fmt.Sprintf("%s#%d(slot %d, token %d, %s, %s..%s)", r.RunID, r.Attempt, r.Slot, r.Token, r.Holder,
			r.Start.Format("15:04:05.000"), r.End.Format("15:04:05.000")))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Property 1: accepted runs of a job never overlap beyond max_concurrency.
func checkOverlap(h *History, jobs map[string]Job, r *Report) {
	for _, j := range h.Jobs {
		n := 0
		maxOverlap(accepted(h, func(x *cluster.Run) bool { return x.Job == j.Name }), j.MaxConcurrency, func(at time.Time, active []*cluster.Run) {
			if n++; n <= 5 {
				r.violate("overlap: job %s had %d accepted runs at %s (max_concurrency %d): %s",
					j.Name, len(active), at.Format("15:04:05.000"), j.MaxConcurrency, describe(active))
			}
		})
	}
}

// Shared resources carry no fencing token to the target, so a frozen
// holder's run can overlap the next holder's; that is counted, anything
// else is a violation.
func checkSharedResources(h *History, jobs map[string]Job, r *Report) {
	for name, limit := range h.Resources {
		users := map[string]bool{}
		for _, j := range h.Jobs {
			for _, res := range j.Resources {
				if res == name {
					users[j.Name] = true
				}
			}
		}
		maxOverlap(accepted(h, func(x *cluster.Run) bool { return users[x.Job] }), limit, func(at time.Time, active []*cluster.Run) {
			for _, a := range active {
				if frozenDuring(h, a.Holder, Window{a.Start, at}) {
					r.ExcusedShared++
					return
				}
			}
			r.violate("resource %s: %d runs at %s (limit %d), no holder frozen: %s", name, len(active),
				at.Format("15:04:05.000"), limit, describe(active))
		})
	}
}

func frozenDuring(h *History, holder string, w Window) bool {
	for _, f := range h.Freezes {
		if f.Holder == holder && !f.From.After(w.To) && !f.To.Before(w.From) {
			return true
		}
	}
	return false
}

// Property 4: per job and slot, accepted tokens strictly increase in the
// order they arrived, but for a strict retry (retries.hold_slot): the next
// attempt of the same run on the slot its attempt before kept carries
// that slot's token again.
func checkTokens(h *History, r *Report) {
	type accepted struct {
		token int64
		run   string
		tries int
	}
	last := map[string]accepted{}
	for _, run := range h.Runs {
		if run.Rejected {
			continue
		}
		k := fmt.Sprintf("%s/%d", run.Job, run.Slot)
		if _, shard, ok := runs.ShardOf(run.RunID); ok {
			k = fmt.Sprintf("%s#%d/%d", run.Job, shard, run.Slot) // slots of its own
		}
		prev, ok := last[k]
		kept := ok && run.Token == prev.token && run.RunID == prev.run && run.Attempt > prev.tries
		if ok && run.Token <= prev.token && !kept {
			r.violate("tokens: %s accepted token %d after %d (%s#%d on %s)", k, run.Token, prev.token, run.RunID, run.Attempt, run.Holder)
		}
		if !ok || run.Token >= prev.token {
			last[k] = accepted{run.Token, run.RunID, run.Attempt}
		}
	}
}

// While the whole store is down no run starts: a run needs a slot, and a
// slot needs etcd. Runs claimed just before may start until the guard ends
// their session.
func checkEtcdDown(h *History, r *Report) {
	for _, w := range h.EtcdDown {
		for _, run := range h.Runs {
			if run.Start.After(w.From.Add(h.RunStartGrace)) && run.Start.Before(w.To) {
				r.violate("etcd down: %s#%d started on %s at %s, with every etcd member down since %s",
					run.RunID, run.Attempt, run.Holder, run.Start.Format("15:04:05.000"), w.From.Format("15:04:05.000"))
			}
		}
	}
}

// The witness's own watch: never more slot keys than slots.
func checkSlotPeaks(h *History, jobs map[string]Job, r *Report) {
	for group, peak := range h.SlotPeaks {
		limit := -1
		if name, ok := strings.CutPrefix(group, cluster.SlotGroup(false, "")); ok {
			if j, ok := jobs[name]; ok {
				limit = j.MaxConcurrency
			}
			if l := keyedLimit(name, jobs); l >= 0 {
				limit = l
			}
		} else if name, ok := strings.CutPrefix(group, cluster.SlotGroup(true, "")); ok {
			if l, ok := h.Resources[name]; ok {
				limit = l
			}
		}
		if limit >= 0 && peak.Count > limit {
			r.violate("slots: %s had %d slot keys at revision %d (limit %d)", group, peak.Count, peak.Rev, limit)
		}
	}
}

// Property 5: after the last heal every job runs again.
func checkHealed(h *History, r *Report) {
	for _, j := range h.Jobs {
		ok := false
		for _, run := range h.Runs {
			if run.Job == j.Name && !run.Rejected && run.Start.After(h.Healed) {
				ok = true
				break
			}
		}
		if !ok {
			r.violate("healed: job %s started no run after the last heal at %s", j.Name, h.Healed.Format("15:04:05.000"))
		}
	}
}

// A record that says succeeded is backed by a witness answer of 200 to
// that attempt.
func checkRecords(h *History, r *Report) {
	ok := map[string]bool{}
	for _, run := range h.Runs {
		if run.Status == 200 {
			ok[fmt.Sprintf("%s#%d", run.RunID, run.Attempt)] = true
		}
	}
	witnessed := map[string]bool{} // jobs whose target is the witness
	for _, j := range h.Jobs {
		witnessed[j.Name] = true
	}
	for id, rec := range h.Records {
		if witnessed[rec.Job] && rec.Outcome == runs.Succeeded && !ok[fmt.Sprintf("%s#%d", id, rec.Attempt)] {
			r.violate("records: %s#%d recorded succeeded, but the witness never answered it 200", id, rec.Attempt)
		}
	}
}
