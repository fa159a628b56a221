package keys

// Overdue is job's overdue state (docs/protocol.md#overdue): the last tick
// the leader judged, and the newest tick it found overdue; written,
// fenced, by the leader in the transaction of the tick's "overdue"
// notifications, so each tick is judged once across leader changes.
func (l Layout) Overdue(job string) string { return l.jobKey(job, overdueState) }

// Succeeded is job's last succeeded run (its id, scheduled and end time),
// put by the transaction that records it (package follow).
func (l Layout) Succeeded(job string) string { return l.jobKey(job, succeededState) }

// OverdueJob returns the job of an overdue state key.
func (l Layout) OverdueJob(key string) (string, bool) { return l.jobState(key, overdueState) }

// SucceededJob returns the job of a last-success key.
func (l Layout) SucceededJob(key string) (string, bool) { return l.jobState(key, succeededState) }
