package leader

import (
	"time"

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

// failedPass counts one more failed pass of job in a row and returns when
// to look at it again.
func (l *leader) failedPass(job string) time.Time {
	l.mu.Lock()
	l.failures[job]++
	n := l.failures[job]
	l.mu.Unlock()
	return l.d.Clock.Now().Add(passRetry.Delay(n))
}
