package leader

import (
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
)

// specBook is what the passes and the spec collector (specs.go) know
// together of one term's specs, under its own lock. written are the spec
// keys this term wrote: a tick writes its spec only when it is not among
// them. gate keeps the collection of unused specs from reading the queue
// while ticks built without their spec's write are on their way: a pass
// holds it shared from building its writes to their answers. assigned are
// the spec keys of assigned ticks, by the last instant assigned: no entry
// refers to them, yet a worker reads them at its claim.
type specBook struct {
	keys     keys.Layout
	gate     sync.RWMutex
	mu       sync.Mutex
	written  map[string]bool
	assigned map[string]time.Time
}

func newSpecBook(layout keys.Layout) *specBook {
	return &specBook{keys: layout, written: map[string]bool{}, assigned: map[string]time.Time{}}
}

// isWritten reports whether this term wrote the spec at key.
func (b *specBook) isWritten(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.written[key]
}

// wrote notes the specs among ops, a transaction that applied.
func (b *specBook) wrote(ops []clientv3.Op) {
	keys := queue.SpecKeys(b.keys, ops)
	if len(keys) == 0 {
		return
	}
	b.mu.Lock()
	for _, k := range keys {
		b.written[k] = true
	}
	b.mu.Unlock()
}

// assign notes that ticks of the spec at key were assigned up to at.
func (b *specBook) assign(key string, at time.Time) {
	b.mu.Lock()
	b.assigned[key] = at
	b.mu.Unlock()
}

// assignedUsed marks in used the specs of ticks assigned within grace,
// and forgets the older ones.
func (b *specBook) assignedUsed(used map[string]bool, now time.Time, grace time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, at := range b.assigned {
		if now.Before(at.Add(grace)) {
			used[k] = true
		} else {
			delete(b.assigned, k)
		}
	}
}

// release takes the collection's candidates out of written, once the
// passes under way are answered (gate): ticks built from then on write
// them again. The specs a pass assigned ticks of since they were found
// unused leave the candidates.
func (b *specBook) release(byJob map[string][]string) {
	b.gate.Lock()
	defer b.gate.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for job, keys := range byJob {
		byJob[job] = slices.DeleteFunc(keys, func(k string) bool { _, ok := b.assigned[k]; return ok })
	}
	for _, keys := range byJob {
		for _, k := range keys {
			delete(b.written, k)
		}
	}
}
