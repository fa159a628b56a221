package jobs

import (
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// RunStatus is one run: queued ("pending"), executing ("running") or
// recorded ("finished"); for a sharded job's tick, with its shards.
type RunStatus = wire.Run

// ShardStatus is one shard run of a sharded job's tick, as the tick's view
// (GET /api/v1/runs/{tick run id}) lists it.
type ShardStatus = wire.Shard

// tickRead is what one read of a tick found (findTick): its fan-in value,
// its shards' queue entries and records, and the shard count the config
// declares (0 for a job no longer in it).
type tickRead struct {
	id, job          string
	shards           int
	fanin            []byte
	entries, records [][]byte
}

// shardRun is the newest attempt of one shard run, with what the tick's
// own line is made of.
type shardRun struct {
	ShardStatus
	trigger     runs.Trigger
	scheduledAt time.Time
	startedAt   time.Time // the first attempt's start
	endedAt     time.Time
	err         string
}

// view is the tick as docs/api.md describes it: each shard's newest
// attempt (a shard recorded lost whose retry is queued or running shows
// the retry, not the loss), and for the tick its trigger, scheduled time,
// highest attempt, first start, end and, when a shard did not succeed,
// which one and why. A tick holds no slot of its own: slot -1.
func (v tickRead) view() RunStatus {
	shards := v.newest()
	st := RunStatus{State: string(queue.Running), Record: runs.Record{RunID: v.id, Job: v.job, Slot: -1}}
	st.ScheduledAt, _ = runs.ScheduledAtOf(v.id)
	n, started := v.shards, false
	if t, ok := queue.DecodeTick(v.fanin); ok {
		st.State, st.Outcome, st.Trigger, st.ScheduledAt, st.EndedAt, n = "finished", t.Outcome, t.Trigger, t.ScheduledAt, t.EndedAt, t.Shards
	}
	var failed []shardRun
	for k, s := range shards {
		n = max(n, k+1)
		started = started || s.State != string(queue.Pending)
		st.Attempt = max(st.Attempt, s.Attempt)
		if st.Trigger == "" || st.Trigger == runs.Retry {
			st.Trigger = s.trigger
		}
		if st.ScheduledAt.IsZero() {
			st.ScheduledAt = s.scheduledAt
		}
		if !s.startedAt.IsZero() && (st.StartedAt.IsZero() || s.startedAt.Before(st.StartedAt)) {
			st.StartedAt = s.startedAt
		}
		if s.State == "finished" && s.Outcome != runs.Succeeded {
			failed = append(failed, s)
		}
	}
	if st.Trigger == runs.Retry {
		// Every shard known is a retry: the tick was made by its schedule
		// or by a trigger, as its id says (queue.TickRecord).
		st.Trigger = runs.Manual
		if _, ok := runs.ScheduledAtOf(v.id); ok {
			st.Trigger = runs.Schedule
		}
	}
	if !started && st.State != "finished" {
		st.State = string(queue.Pending)
	}
	st.Error = shardsError(failed)
	for k := range n {
		s, ok := shards[k]
		if !ok {
			s.ShardStatus = ShardStatus{Shard: k, RunID: runs.ShardID(v.id, k), State: "unknown"}
		}
		st.Shards = append(st.Shards, s.ShardStatus)
	}
	return st
}

// newest is each shard's newest attempt, by index: a queue entry (pending
// or running) of a higher attempt than the shard's record is the retry
// or requeue that record caused; at one attempt the record, the end, wins.
func (v tickRead) newest() map[int]shardRun {
	out := map[int]shardRun{}
	first := map[int]time.Time{} // each shard's first start, of any attempt
	keep := func(s shardRun) {
		t, k, ok := runs.ShardOf(s.RunID)
		if !ok || t != v.id {
			return
		}
		s.Shard = k
		if f := first[k]; !s.startedAt.IsZero() && (f.IsZero() || s.startedAt.Before(f)) {
			first[k] = s.startedAt
		}
		old, seen := out[k]
		if !seen || s.Attempt > old.Attempt || (s.Attempt == old.Attempt && s.State == "finished" && old.State != "finished") {
			out[k] = s
		}
	}
	for _, b := range v.records {
		r, err := runs.DecodeRecord(b)
		if err != nil {
			continue
		}
		started := r.StartedAt
		for _, p := range r.Previous {
			if !p.StartedAt.IsZero() && (started.IsZero() || p.StartedAt.Before(started)) {
				started = p.StartedAt
			}
		}
		keep(shardRun{ShardStatus: ShardStatus{RunID: r.RunID, State: "finished", Outcome: r.Outcome, Attempt: r.Attempt},
			trigger: r.Trigger, scheduledAt: r.ScheduledAt, startedAt: started, endedAt: r.EndedAt, err: r.Error})
	}
	for _, b := range v.entries {
		q, err := queue.Decode(b)
		if err != nil {
			continue
		}
		started := q.StartedAt
		if q.State != queue.Running {
			started = time.Time{}
		}
		keep(shardRun{ShardStatus: ShardStatus{RunID: q.RunID, State: string(q.State), Attempt: q.Attempt},
			trigger: q.Trigger, scheduledAt: q.ScheduledAt, startedAt: started})
	}
	for k, s := range out {
		s.startedAt = first[k]
		out[k] = s
	}
	return out
}

// shardsError names the worst of the shards that ended without success
// (the one that decides the tick's outcome, the lowest index among
// equals) with its error, and how many more did not succeed.
func shardsError(failed []shardRun) string {
	if len(failed) == 0 {
		return ""
	}
	w := failed[0]
	for _, s := range failed[1:] {
		if sev, wsev := runs.Severity(s.Outcome), runs.Severity(w.Outcome); sev > wsev || (sev == wsev && s.Shard < w.Shard) {
			w = s
		}
	}
	msg := fmt.Sprintf("shard %d %s", w.Shard, w.Outcome)
	if w.err != "" {
		msg += ": " + w.err
	}
	switch more := len(failed) - 1; more {
	case 0:
	case 1:
		msg += " (and 1 more shard did not succeed)"
	default:
		msg += fmt.Sprintf(" (and %d more shards did not succeed)", more)
	}
	return msg
}
