package keys

import "strings"

// Overdue is job's overdue state (docs/protocol.md#overdue): the last tick
// the leader judged, and the newest tick it found overdue; written,
// fenced, by the leader in the transaction of the tick's "overdue"
// notifications, so each tick is judged once across leader changes.
func (l Layout) Overdue(job string) string { return l.jobKey(job, overdueState) }

// LastSuccess is where a transaction that records a succeeded run puts
// the job's last success (its id, scheduled and end time; package
// follow): succeeded/<job>, a directory no replica watches, so that a run
// is not an event on every replica (docs/protocol.md#keys); or, with
// SuccessInJobs, SucceededInJobs.
func (l Layout) LastSuccess(job string) string {
	if l.SuccessInJobs {
		return l.SucceededInJobs(job)
	}
	return l.LastSuccesses() + job
}

// LastSuccesses is the directory of LastSuccess.
func (l Layout) LastSuccesses() string { return l.Prefix + successDir }

// LastSuccessJob returns the job of a key under LastSuccesses.
func (l Layout) LastSuccessJob(key string) (string, bool) {
	job, ok := strings.CutPrefix(key, l.LastSuccesses())
	return job, ok && job != ""
}

// SucceededInJobs is where replicas before protocol 3 put and read a
// job's last success, under jobs/, which every replica mirrors; replicas
// since read it beside LastSuccess and take the later.
func (l Layout) SucceededInJobs(job string) string { return l.jobKey(job, succeededState) }

// OverdueJob returns the job of an overdue state key.
func (l Layout) OverdueJob(key string) (string, bool) { return l.jobState(key, overdueState) }

// SucceededJob returns the job of a SucceededInJobs key.
func (l Layout) SucceededJob(key string) (string, bool) { return l.jobState(key, succeededState) }
