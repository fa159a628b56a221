package keys

// fanInDir holds the fan-in state of the ticks of sharded jobs (docs/design-sharded.md, docs/design.md "Sharded jobs").
const fanInDir = "fanin/"

// FanIns holds fanin/<job>/<tick run id>, one per tick of a sharded job.
func (l Layout) FanIns() string { return l.Prefix + fanInDir }

// JobFanIns holds the fan-in keys of job's ticks.
func (l Layout) JobFanIns(job string) string { return l.FanIns() + job + "/" }

// FanIn is the tick's fan-in key: created with the tick (Version 1), put
// once more by each shard's final end, so the end that finds Version N is
// the last of N; its value is the tick's outcome once that end wrote it.
func (l Layout) FanIn(job, tickID string) string { return l.JobFanIns(job) + tickID }

// FanInWorst is the tick's worst outcome so far, a severity digit
// (runs.Severity) each final end raises without reading it.
func (l Layout) FanInWorst(job, tickID string) string { return l.FanIn(job, tickID) + "/worst" }
