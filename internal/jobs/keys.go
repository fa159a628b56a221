// Package jobs is the dispatch engine: the leader turns job declarations into
// queue entries, one per tick and exactly once; every replica's worker claims
// entries together with their slots, runs the target and releases the slot
// with the run's record.
package jobs

// Keys is the etcd key layout of SPEC section 4 under one prefix.
type Keys struct{ Prefix string }

// QueuePrefix holds every queued and running run.
func (k Keys) QueuePrefix() string { return k.Prefix + "queue/" }

// Queue is the entry of one run.
func (k Keys) Queue(job, runID string) string { return k.QueuePrefix() + job + "/" + runID }

// JobsPrefix holds per-job state: cursors and pause markers.
func (k Keys) JobsPrefix() string { return k.Prefix + "jobs/" }

// Cursor is the last tick the leader materialized for job.
func (k Keys) Cursor(job string) string { return k.JobsPrefix() + job + "/cursor" }

// Paused exists while job is paused.
func (k Keys) Paused(job string) string { return k.JobsPrefix() + job + "/paused" }

// CancelPrefix holds cancel requests for running runs.
func (k Keys) CancelPrefix() string { return k.Prefix + "cancel/" }

// Cancel asks the holder of runID to stop it.
func (k Keys) Cancel(runID string) string { return k.CancelPrefix() + runID }

// RunsPrefix holds finished-run records.
func (k Keys) RunsPrefix() string { return k.Prefix + "runs/" }

// JobRuns holds the records of one job.
func (k Keys) JobRuns(job string) string { return k.RunsPrefix() + job + "/" }

// Record is the finished-run record of runID.
func (k Keys) Record(job, runID string) string { return k.JobRuns(job) + runID }
