package runs

import (
	"encoding/json"
	"fmt"
	"time"
)

// A chunk record is the record of scheduled ticks due at one instant that
// a worker shed together (not started: missed or skipped), stored at
// shed/<instant>/<worker>/<group>/<n> as one key for many ticks
// (docs/design-shed.md). Each tick in it reads as the record of its own
// that a shed tick has otherwise (Records): a reader merges the two and
// cannot tell them apart, except that a chunk record's ticks have no key
// each under runs/.

// NoSlot is the slot a record of a run that never held one says.
const NoSlot = -1

// ChunkRecord is the stored form of a chunk record.
type ChunkRecord struct {
	// At is the instant every tick in it was due.
	At time.Time `json:"at"`
	// EndedAt is when the worker shed them.
	EndedAt time.Time `json:"ended_at"`
	Runs    []ShedRun `json:"runs"`
}

// ShedRun is one tick of a chunk record: what differs between the ticks
// of one instant.
type ShedRun struct {
	Job            string  `json:"job"`
	Outcome        Outcome `json:"outcome"`
	Error          string  `json:"error,omitempty"`
	ConcurrencyKey string  `json:"concurrency_key,omitempty"`
}

// Records are c's ticks, each the record a shed tick of its own has: the
// first attempt of a scheduled run at c.At, no slot, ended at c.EndedAt.
func (c *ChunkRecord) Records() []Record {
	out := make([]Record, len(c.Runs))
	for i := range c.Runs {
		out[i] = c.record(&c.Runs[i])
	}
	return out
}

// Find is the record of job's tick in c, if c has one.
func (c *ChunkRecord) Find(job string) (Record, bool) {
	for i := range c.Runs {
		if c.Runs[i].Job == job {
			return c.record(&c.Runs[i]), true
		}
	}
	return Record{}, false
}

// Without is c less the ticks of jobs: what a chunk record holds once the
// prune took those out of it (docs/design-shed.md, "Retention").
func (c *ChunkRecord) Without(jobs map[string]bool) ChunkRecord {
	out := ChunkRecord{At: c.At, EndedAt: c.EndedAt}
	for _, r := range c.Runs {
		if !jobs[r.Job] {
			out.Runs = append(out.Runs, r)
		}
	}
	return out
}

func (c *ChunkRecord) record(r *ShedRun) Record {
	return Record{
		RunID: ID(r.Job, c.At), Job: r.Job, Attempt: 1, Trigger: Schedule, ScheduledAt: c.At.UTC(),
		EndedAt: c.EndedAt.UTC(), Slot: NoSlot, Outcome: r.Outcome, Error: r.Error, ConcurrencyKey: r.ConcurrencyKey,
	}
}

// EncodeChunkRecord is c as stored.
func EncodeChunkRecord(c *ChunkRecord) string {
	b, err := json.Marshal(c)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("runs: encode chunk record: %v", err))
	}
	return string(b)
}

// DecodeChunkRecord reads a stored chunk record. It refuses one that no
// writer writes (no instant, a tick that started or twice the same job),
// so a reader never answers a tick from a record that does not mean it.
func DecodeChunkRecord(b []byte) (ChunkRecord, error) {
	var c ChunkRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return ChunkRecord{}, fmt.Errorf("runs: decode chunk record: %w", err)
	}
	if c.At.IsZero() || c.EndedAt.IsZero() {
		return ChunkRecord{}, fmt.Errorf("runs: decode chunk record: no instant or end")
	}
	seen := make(map[string]bool, len(c.Runs))
	for _, r := range c.Runs {
		switch {
		case r.Job == "":
			return ChunkRecord{}, fmt.Errorf("runs: decode chunk record: a tick without a job")
		case r.Outcome != Skipped && r.Outcome != Missed:
			return ChunkRecord{}, fmt.Errorf("runs: decode chunk record: job %s's tick %s, not skipped or missed", r.Job, r.Outcome)
		case seen[r.Job]:
			return ChunkRecord{}, fmt.Errorf("runs: decode chunk record: job %s's tick twice", r.Job)
		}
		seen[r.Job] = true
	}
	c.At, c.EndedAt = c.At.UTC(), c.EndedAt.UTC()
	return c, nil
}
