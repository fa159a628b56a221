package overdue

import (
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Outcomes of a tick that has not ended, as an overdue notification
// names them beside the run outcomes (failed, missed...).
const (
	Running      = "running"
	Queued       = "queued"
	NeverStarted = "never started"
)

// Read is what etcd holds of one tick when it falls due: the queue
// entries and records of its run (or of its shards), its fan-in value
// (a sharded tick's outcome once every shard ended) and whether a slot
// says one of its runs is executing (an assigned run of the lean
// protocol has no entry while it runs).
type Read struct {
	Entries, Records [][]byte
	FanIn            []byte
	Executing        bool
}

// Judge says whether the tick succeeded (every shard, for a sharded
// tick) and, if not, what it is so far: running, queued, the outcome of
// its last attempt (failed with a retry pending, missed, lost...) or never
// started. A run retried keeps its id: its entry, when there is one, is
// the attempt to come, and the record beside it the last attempt's end.
func (r Read) Judge() (outcome string, succeeded bool) {
	if t, ok := queue.DecodeTick(r.FanIn); ok {
		return string(t.Outcome), t.Outcome == runs.Succeeded
	}
	ended := map[string]runs.Outcome{} // run id -> its last attempt's end
	for _, b := range r.Records {
		if rec, err := runs.DecodeRecord(b); err == nil {
			ended[rec.RunID] = rec.Outcome
		}
	}
	running, queued := r.Executing, false
	var worst runs.Outcome
	for _, b := range r.Entries {
		e, err := queue.Decode(b)
		if err != nil {
			continue
		}
		switch {
		case e.State == queue.Running:
			running = true
		case len(e.Previous) > 0:
			worst = worse(worst, e.Previous[len(e.Previous)-1].Outcome)
		default:
			queued = true
		}
		delete(ended, e.RunID) // the entry is its newer attempt
	}
	if len(r.Entries) == 0 && len(ended) == 1 {
		for id, o := range ended {
			if _, _, shard := runs.ShardOf(id); !shard {
				return string(o), o == runs.Succeeded // an unsharded run's end
			}
		}
	}
	for _, o := range ended {
		if o != runs.Succeeded {
			worst = worse(worst, o)
		}
	}
	switch {
	case running:
		return Running, false
	case worst != "":
		return string(worst), false
	case queued:
		return Queued, false
	case len(ended) > 0:
		return Running, false // some shards succeeded, the tick's end is still to be written
	}
	return NeverStarted, false
}

// worse is the more severe of a (empty: none yet) and b.
func worse(a, b runs.Outcome) runs.Outcome {
	if a == "" {
		return b
	}
	return runs.Worst(a, b)
}
