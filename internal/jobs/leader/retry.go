package leader

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/backoff"
)

// passRetry spaces the looks at a job whose pass failed (etcd did not
// answer, a write was refused): 500ms at first, as quick as a pass that
// conflicted, so a tick is late by little after a blip; up to 2s while etcd
// keeps failing, well within a tick's lookahead; half of each delay random,
// so the jobs that failed in one pass do not all write again at once.
var passRetry = backoff.Policy{Min: 500 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}

// roundRetry spaces the tries of the term's housekeeping rounds (ending
// expired pauses, keeping removed jobs' history) while etcd fails them: 1s
// at first, so a pause ends close to its until after a blip; up to 10s, the
// pace of a round nobody waits on; half of each delay random.
var roundRetry = backoff.Policy{Min: time.Second, Max: 10 * time.Second, Jitter: 0.5}

// passFailures counts each job's failed passes in a row, for the backoff
// of its next look; the pass goroutines share it, under its own lock.
type passFailures struct {
	clock clockwork.Clock
	mu    sync.Mutex
	n     map[string]int
}

func newPassFailures(clock clockwork.Clock) *passFailures {
	return &passFailures{clock: clock, n: map[string]int{}}
}

// failed counts one more failed pass of job in a row and returns when to
// look at it again.
func (f *passFailures) failed(job string) time.Time {
	f.mu.Lock()
	f.n[job]++
	n := f.n[job]
	f.mu.Unlock()
	return f.clock.Now().Add(passRetry.Delay(n))
}

// passed forgets job's failures: its next failure waits the least.
func (f *passFailures) passed(job string) {
	f.mu.Lock()
	delete(f.n, job)
	f.mu.Unlock()
}
