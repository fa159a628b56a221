// Package backfill queues the past ticks of a job that no leader ever
// authorized (docs/operations.md#backfilling), under their scheduled run ids, so that a
// tick runs at most once between the schedule and any number of
// overlapping backfills, concurrent ones included.
//
// The argument (docs/design-leader.md, "Backfill never reruns a tick"): a leader
// authorizes a tick by moving the job's cursor over it, and from then until
// it is done the tick is at every revision in one of three places: its
// record (runs/<job>/<run-id>), its queue entry (queue/<job>/<run-id>), or
// an assignment naming the job at that instant (assign/..., the lean
// protocol); once done, in its record or a chunk record naming it
// (shed/<instant>/..., docs/design-shed.md) until the prune deletes it, and in
// the job's pruned stretches (pruned/<job>, package jobs/pruned) from
// before that delete on. The cursor moves back only over ticks not yet due that the
// leader withdraws, and the leader writes a tick only where it has no entry
// and no record. So one read at one revision tells every tick of the range
// apart: after the cursor, the schedule will run or record it; in one of
// those places, it exists; in none, it was never authorized and never
// will be, and only a backfill may queue it, with a transaction that fails
// when another writer did first.
package backfill

import (
	"errors"
	"github.com/etcdsched/scheduler/internal/refusal"
)

// MaxTicks is the most ticks one backfill may cover.
const MaxTicks = 10_000

// The errors a backfill is refused with; each comes wrapped in an error
// whose UserMessage says what to do, in the words of the job and times.
var (
	// ErrBadRange: from and to do not make a past range.
	ErrBadRange = errors.New("backfill: bad range")
	// ErrTooManyTicks: the range holds more than MaxTicks ticks.
	ErrTooManyTicks = errors.New("backfill: too many ticks")
	// ErrNotScheduled: no leader has taken the job up yet (it has no
	// cursor), so which ticks the schedule will run is not known.
	ErrNotScheduled = errors.New("backfill: job not scheduled yet")
)

// refuse is one of the errors above with a sentence for the person who
// asked: it names the job or run and says what to do.
var refuse = refusal.New
