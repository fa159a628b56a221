package schedule

import "time"

// Manually is the schedule of a job that runs only when triggered (API,
// CLI, chain): it never fires by itself.
const Manually = "@manually"

type manually struct{}

// Next is always zero: there is no next tick, and the leader, which stops
// planning a job at a zero Next, writes none.
func (manually) Next(time.Time) time.Time { return time.Time{} }

func (manually) String() string { return Manually }
