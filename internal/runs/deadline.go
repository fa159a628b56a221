package runs

import "time"

// noDeadline is how far off a backfilled run's starting deadline is: it
// has none, and a time stays comparable where a flag would be one more
// case in every wait.
const noDeadline = 100 * 365 * 24 * time.Hour

// StartBy is when a run due at notBefore must have started, with its job's
// starting deadline d. A backfilled run (docs/operations.md#backfilling) has none: its
// tick is past by design and it waits its turn however long that takes.
func StartBy(trigger Trigger, notBefore time.Time, d time.Duration) time.Time {
	if trigger == Backfill {
		return notBefore.Add(noDeadline)
	}
	return notBefore.Add(d)
}
