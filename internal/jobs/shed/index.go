package shed

import (
	"log/slog"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Index is a replica's view of the chunk records under shed/ with their
// ticks by job, filled by mirror.Run: a chunk record's key names no job, so
// a job's history (a page of its runs, its last run) merges the job's
// records with its ticks here, and the leader's prune counts them among the
// job's unstarted records, rather than read every job's chunk records over
// its span. One watch event for the many ticks of a chunk record.
type Index struct {
	*mirror.Map[string, Chunk]
	byJob map[string]map[string]Tick // job -> run id -> tick; under the map's lock
}

// Tick is one tick of a chunk record: the record's key and revisions, and
// the tick's record. Where it sorts among its job's records, which are
// ordered by their mod revision, is its chunk record's create revision
// (Chunk.Created).
type Tick struct {
	Key          string
	Rev, Created int64
	Record       runs.Record
}

// NewIndex is an empty index; mirror.Run fills it. A chunk record that
// cannot be read is logged and left out.
func NewIndex(k keys.Layout, log *slog.Logger) *Index {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &Index{byJob: map[string]map[string]Tick{}}
	x.Map = mirror.NewMap(func(key string) (string, bool) { return key, true },
		func(kv *mvccpb.KeyValue, _ Chunk, _ bool) (Chunk, bool) {
			chunks, bad := Decode(k, []*mvccpb.KeyValue{kv})
			for _, u := range bad {
				log.Warn("ignoring an unreadable chunk record: its ticks are left out of their jobs' histories", "key", u.Key, "err", u.Err)
			}
			if len(chunks) == 0 {
				return Chunk{}, false
			}
			return chunks[0], true
		})
	x.OnChange(x.changed)
	return x
}

// changed keeps byJob as the map changes (under its lock).
func (x *Index) changed(c mirror.Change[string, Chunk]) {
	if c.Had {
		for _, rec := range c.Prev.Records() {
			delete(x.byJob[rec.Job], rec.RunID)
			if len(x.byJob[rec.Job]) == 0 {
				delete(x.byJob, rec.Job)
			}
		}
	}
	if c.Deleted {
		return
	}
	for _, rec := range c.Value.Records() {
		if x.byJob[rec.Job] == nil {
			x.byJob[rec.Job] = map[string]Tick{}
		}
		x.byJob[rec.Job][rec.RunID] = Tick{Key: c.Key, Rev: c.Value.Rev, Created: c.Value.Created, Record: rec}
	}
}

// Job lists job's ticks in chunk records, in no order: the reader orders
// them with the job's records (runspage.go's sortNewestFirst).
func (x *Index) Job(job string) []Tick {
	var out []Tick
	x.With(func(func(string) (Chunk, bool), func(string, Chunk)) {
		for _, t := range x.byJob[job] {
			out = append(out, t)
		}
	})
	return out
}

// Jobs are the jobs with ticks in chunk records, in no order.
func (x *Index) Jobs() []string {
	var out []string
	x.With(func(func(string) (Chunk, bool), func(string, Chunk)) {
		for job := range x.byJob {
			out = append(out, job)
		}
	})
	return out
}
