package pause

import (
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// View is every replica's view of the pause markers under jobs/, by
// job: a marker wins over the file's paused setting, and a pause with an
// until ends by itself at until, whether or not the leader has deleted its
// marker yet. Changed closes when a job is paused or resumed; Seen tells
// whether the view shows a write.
type View struct {
	*mirror.Map[string, stored]
	clock clockwork.Clock
}

// stored is a marker as read.
type stored struct {
	Marker
	rev int64 // ModRevision
}

// NewView is an empty pause state; mirror.Run fills it. clock (nil: the
// real one) tells when a pause's until has passed. The other keys under
// jobs/ (cursors: the leader's own writes) are not the view's.
func NewView(layout keys.Layout, clock clockwork.Clock) *View {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	m := mirror.NewMap(layout.PausedJob, func(kv *mvccpb.KeyValue, _ stored, _ bool) (stored, bool) {
		return stored{Marker: Decode(kv.Value), rev: kv.ModRevision}, true
	})
	return &View{Map: m, clock: clock}
}

// Is reports whether job is paused: the etcd marker if there is one (a
// pause past its until is over), else the file's setting.
func (s *View) Is(job string, file bool) bool {
	return s.State(job, file).Paused
}

// State is job's pause as it holds now: the marker's, with its reason and
// until, or the file's setting when there is no marker. A pause past its
// until is no pause.
func (s *View) State(job string, file bool) Marker {
	m, ok := s.Get(job)
	if !ok {
		return Marker{Paused: file}
	}
	if !m.ActiveAt(s.clock.Now()) {
		return Marker{}
	}
	return m.Marker
}

// Expiring is a pause with an until, as read: what the leader ends.
type Expiring struct {
	Job   string
	Until time.Time
	Rev   int64 // the marker's ModRevision
}

// Expiring lists the pauses that end by themselves.
func (s *View) Expiring() []Expiring {
	var out []Expiring
	s.Range(func(job string, m stored) bool {
		if m.Paused && !m.Until.IsZero() {
			out = append(out, Expiring{Job: job, Until: m.Until, Rev: m.rev})
		}
		return true
	})
	return out
}
