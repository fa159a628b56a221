package overdue

import (
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// View is every replica's copy of the jobs' overdue states and of the
// last successes replicas before protocol 3 put under jobs/ (the keys
// under jobs/ this package names), by etcd key: what the API's job and
// the gauges read, the same on every replica, with Last's.
type View struct {
	*mirror.Map[string, stored]
	keys keys.Layout
}

// stored is one key's value as read: an overdue state, or a last success
// an older replica put (decoded as it comes: such puts come only while
// one runs, and a scrape reads every job's).
type stored struct {
	state     *State
	succeeded *Succeeded
	rev       int64 // ModRevision
}

// NewView is an empty view; mirror.Run over jobs/ fills it.
func NewView(k keys.Layout) *View {
	mine := func(key string) (string, bool) {
		if _, ok := k.OverdueJob(key); ok {
			return key, true
		}
		_, ok := k.SucceededJob(key)
		return key, ok
	}
	return &View{keys: k, Map: mirror.NewMap(mine, func(kv *mvccpb.KeyValue, _ stored, _ bool) (stored, bool) {
		if _, ok := k.OverdueJob(string(kv.Key)); ok {
			s, ok := Decode[State](kv.Value)
			return stored{state: &s, rev: kv.ModRevision}, ok
		}
		s, ok := Decode[Succeeded](kv.Value)
		return stored{succeeded: &s, rev: kv.ModRevision}, ok
	})}
}

// State is job's overdue state and its ModRevision; ok is false when the
// leader has not judged a tick of it yet.
func (v *View) State(job string) (s State, rev int64, ok bool) {
	st, ok := v.Get(v.keys.Overdue(job))
	if !ok || st.state == nil {
		return State{}, 0, false
	}
	return *st.state, st.rev, true
}

// LastSucceeded is job's last succeeded run as a replica before protocol
// 3 put it (keys.SucceededInJobs); nil when none did, or when its stored
// value cannot be read (only a writer other than the scheduler's would
// store such a value). Last.Of answers the job's last success.
func (v *View) LastSucceeded(job string) *Succeeded {
	st, ok := v.Get(v.keys.SucceededInJobs(job))
	if !ok {
		return nil
	}
	return st.succeeded
}

// Job is what the API and the gauges show of job whose last success is
// last (Last's): whether it is overdue (IsOverdue) and when it last
// succeeded (zero: not known).
func (v *View) Job(job string, last *Succeeded) (isOverdue bool, lastSucceeded time.Time) {
	s, _, _ := v.State(job)
	if last != nil {
		lastSucceeded = last.EndedAt
	}
	return IsOverdue(s, last), lastSucceeded
}
