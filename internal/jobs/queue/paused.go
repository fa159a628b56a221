package queue

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Paused mirrors jobs/: which jobs are paused. Pause is stored in etcd so
// it holds cluster-wide and across restarts, and wins over the file: the
// marker jobs/<job>/paused holds "true" while paused; "false" records a
// resume of a job whose file says paused: true; no marker, the file decides.
type Paused struct {
	keys keys.Layout

	mu      sync.Mutex
	paused  map[string]bool // job -> marker value
	changed chan struct{}
}

// NewPaused is an empty pause state; mirror.Run fills it.
func NewPaused(layout keys.Layout) *Paused {
	return &Paused{keys: layout, paused: map[string]bool{}, changed: make(chan struct{})}
}

func (s *Paused) pauseJob(key []byte) (string, bool) { return s.keys.PausedJob(string(key)) }

// Reset implements mirror.Handler.
func (s *Paused) Reset(kvs []*mvccpb.KeyValue, _ int64) {
	paused := map[string]bool{}
	for _, kv := range kvs {
		if job, ok := s.pauseJob(kv.Key); ok {
			paused[job] = string(kv.Value) != "false"
		}
	}
	s.mu.Lock()
	s.paused = paused
	s.signalLocked()
	s.mu.Unlock()
}

// Apply implements mirror.Handler.
func (s *Paused) Apply(events []*clientv3.Event, _ int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
			s.paused[job] = string(ev.Kv.Value) != "false"
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

// Is reports whether job is paused: the etcd marker if there is one,
// else the file's setting.
func (s *Paused) Is(job string, file bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.paused[job]; ok {
		return v
	}
	return file
}

// Changed closes when a job is paused or resumed.
func (s *Paused) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
