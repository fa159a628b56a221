package fault

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/test/cluster"
)

// Sharded is a sharded job of the workload (docs/design-sharded.md). It is not
// among History.Jobs: max_concurrency holds per shard index, and a tick is
// its shards, so the per-job properties do not apply to it; checkShards
// does.
type Sharded struct {
	Name           string
	Every          time.Duration
	Shards         int
	MaxConcurrency int
	// Chained is the job chained after the sharded one on succeeded ticks;
	// "" for none.
	Chained string
}

// FanIn is a tick's fan-in key as last written: Version counts its
// writes (1 at the tick's authorization, one a final shard end), across a
// prune; Done says the last end wrote the tick's Outcome; Pruned that the
// leader deleted it since.
type FanIn struct {
	Version int64
	Done    bool
	Outcome runs.Outcome
	Pruned  bool
}

// checkShards: for every tick of a sharded job, every shard accounted
// (ran or recorded; a tick of which no shard was is excused inside a
// failover window only, a tick of which some shards are not never), no
// shard run twice (checkTwice, by run id), and exactly one fan-in: once
// all of a tick's shards have final records, its fan-in key was written
// by exactly its N final ends plus its authorization and holds the worst
// of their outcomes; a fan-in never precedes a shard's final record; the
// chained job runs once per tick fanned in succeeded and never otherwise.
func checkShards(h *History, r *Report) {
	ran := map[string]bool{}
	for _, run := range h.Runs {
		ran[run.RunID] = true
	}
	for _, j := range h.Sharded {
		checkShardOverlap(h, j, r)
		checkShardTicks(h, j, ran, r)
		for tick, f := range h.FanIns {
			if runs.JobOf(tick) == j.Name {
				checkFanIn(h, j, tick, f, ran, r)
			}
		}
	}
}

// checkShardOverlap: accepted runs of one shard index never overlap
// beyond max_concurrency.
func checkShardOverlap(h *History, j Sharded, r *Report) {
	n := 0
	for k := range j.Shards {
		of := func(x *cluster.Run) bool {
			_, i, ok := runs.ShardOf(x.RunID)
			return x.Job == j.Name && ok && i == k
		}
		maxOverlap(accepted(h, of), j.MaxConcurrency, func(at time.Time, active []*cluster.Run) {
			if n++; n <= 5 {
				r.violate("shards: shard %d of %s had %d accepted runs at %s (max_concurrency %d): %s",
					k, j.Name, len(active), at.Format("15:04:05.000"), j.MaxConcurrency, describe(active))
			}
		})
	}
}

// checkShardTicks: every shard of every tick from the checked range on
// ran or was recorded.
func checkShardTicks(h *History, j Sharded, ran map[string]bool, r *Report) {
	first := h.TicksFrom.Truncate(j.Every).Add(j.Every)
	bad := 0
	for t := first; !t.After(h.TicksUntil); t = t.Add(j.Every) {
		r.TicksChecked++
		tick := runs.ID(j.Name, t)
		if _, ok := h.Records[tick]; ok {
			r.ShardTicks++ // recorded missed as a whole by the leader
			continue
		}
		var missing []string
		for k := range j.Shards {
			id := runs.ShardID(tick, k)
			if _, ok := h.Records[id]; !ok && !ran[id] {
				missing = append(missing, strconv.Itoa(k))
			}
		}
		switch {
		case len(missing) == 0:
			r.ShardTicks++
			continue
		case len(missing) == j.Shards && slices.ContainsFunc(h.Failover, func(w Window) bool { return w.contains(t) }):
			r.TicksLost++
			continue
		}
		if bad++; bad <= 5 {
			r.violate("shards: tick %s: shards %v of %d neither ran nor were recorded", tick, missing, j.Shards)
		}
	}
}

// checkFanIn: the tick's fan-in against its shards' records and its
// chained run.
func checkFanIn(h *History, j Sharded, tick string, f FanIn, ran map[string]bool, r *Report) {
	var outcomes []runs.Outcome
	for k := range j.Shards {
		id := runs.ShardID(tick, k)
		rec, ok := h.Records[id]
		if ok && rec.Outcome != queuedOutcome && !h.Queued[id] {
			outcomes = append(outcomes, rec.Outcome)
		}
	}
	final := len(outcomes) == j.Shards
	switch {
	case f.Version > int64(j.Shards)+1:
		r.violate("fan-in: %s written %d times, more than its authorization and %d final ends", tick, f.Version, j.Shards)
	case f.Done && !final:
		r.violate("fan-in: %s fanned in (%s) with %d of %d shards recorded", tick, f.Outcome, len(outcomes), j.Shards)
	case final && !f.Done:
		r.violate("fan-in: every shard of %s recorded, and no fan-in (version %d)", tick, f.Version)
	case final && f.Version != int64(j.Shards)+1:
		r.violate("fan-in: %s has version %d after its %d final ends, want %d", tick, f.Version, j.Shards, j.Shards+1)
	case final && f.Outcome != runs.Worst(outcomes...):
		r.violate("fan-in: %s says %s, its shards %v", tick, f.Outcome, outcomes)
	}
	if f.Done {
		r.FanIns++
	}
	if f.Pruned {
		r.FanInsPruned++
		if !f.Done { // its shards' final ends still count on it
			r.violate("fan-in: %s deleted before it fanned in (version %d)", tick, f.Version)
		}
	}
	if j.Chained == "" {
		return
	}
	// The chained run's entry or record is written with the fan-in, so it
	// is in etcd at the read revision only if the fan-in is; the witness
	// may have seen it run after that read.
	down := runs.ChainID(j.Chained, tick)
	_, inEtcd := h.Records[down]
	succeeded := f.Done && f.Outcome == runs.Succeeded
	switch {
	case succeeded && !inEtcd && !ran[down]:
		r.violate("fan-in: %s succeeded, and %s was never queued", tick, down)
	case inEtcd && !succeeded, ran[down] && f.Done && !succeeded:
		r.violate("fan-in: %s was queued after %s, which did not fan in succeeded (%s)", down, tick, f)
	case succeeded:
		r.ChainRuns++
	}
}

// String is a fan-in for a log line.
func (f FanIn) String() string {
	return fmt.Sprintf("version %d, done %v, outcome %s", f.Version, f.Done, f.Outcome)
}
