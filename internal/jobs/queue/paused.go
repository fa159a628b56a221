package queue

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Paused is every replica's view of the pause markers under jobs/: a
// marker wins over the file's paused setting, and a pause with an until
// ends by itself at until, whether or not the leader has deleted its
// marker yet.
type Paused struct {
	keys  keys.Layout
	clock clockwork.Clock

	mu      sync.Mutex
	paused  map[string]marker // job -> marker
	rev     int64             // the revision the view is at
	changed chan struct{}
}

// marker is a pause marker as read.
type marker struct {
	Pause
	rev int64 // ModRevision
}

// NewPaused is an empty pause state; mirror.Run fills it. clock (nil: the
// real one) tells when a pause's until has passed.
func NewPaused(layout keys.Layout, clock clockwork.Clock) *Paused {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Paused{keys: layout, clock: clock, paused: map[string]marker{}, changed: make(chan struct{})}
}

func (s *Paused) pauseJob(key []byte) (string, bool) { return s.keys.PausedJob(string(key)) }

// Reset implements mirror.Handler.
func (s *Paused) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	paused := map[string]marker{}
	for _, kv := range kvs {
		if job, ok := s.pauseJob(kv.Key); ok {
			paused[job] = marker{Pause: DecodePause(kv.Value), rev: kv.ModRevision}
		}
	}
	s.mu.Lock()
	s.paused = paused
	s.rev = rev
	s.signalLocked()
	s.mu.Unlock()
}

// Apply implements mirror.Handler.
func (s *Paused) Apply(events []*clientv3.Event, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev = max(s.rev, rev)
	changed := false
	for _, ev := range events {
		job, ok := s.pauseJob(ev.Kv.Key)
		if !ok {
			continue // cursors: the leader's own writes
		}
		changed = true
		if ev.Type == clientv3.EventTypeDelete {
			delete(s.paused, job)
		} else {
			s.paused[job] = marker{Pause: DecodePause(ev.Kv.Value), rev: ev.Kv.ModRevision}
		}
	}
	if changed {
		s.signalLocked()
	}
}

func (s *Paused) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Is reports whether job is paused: the etcd marker if there is one (a
// pause past its until is over), else the file's setting.
func (s *Paused) Is(job string, file bool) bool {
	return s.State(job, file).Paused
}

// State is job's pause as it holds now: the marker's, with its reason and
// until, or the file's setting when there is no marker. A pause past its
// until is no pause.
func (s *Paused) State(job string, file bool) Pause {
	s.mu.Lock()
	m, ok := s.paused[job]
	s.mu.Unlock()
	if !ok {
		return Pause{Paused: file}
	}
	if !m.ActiveAt(s.clock.Now()) {
		return Pause{}
	}
	return m.Pause
}

// Expiring is a pause with an until, as read: what the leader ends.
type Expiring struct {
	Job   string
	Until time.Time
	Rev   int64 // the marker's ModRevision
}

// Expiring lists the pauses that end by themselves.
func (s *Paused) Expiring() []Expiring {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Expiring
	for job, m := range s.paused {
		if m.Paused && !m.Until.IsZero() {
			out = append(out, Expiring{Job: job, Until: m.Until, Rev: m.rev})
		}
	}
	return out
}

// Seen reports whether the view shows every change up to rev.
func (s *Paused) Seen(rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev >= rev
}

// Changed closes when a job is paused or resumed.
func (s *Paused) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
