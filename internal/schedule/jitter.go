package schedule

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// Jitter returns the delay in [0, max) added to a tick of job. It is a hash
// of the job name and the tick, not a random number: whichever replica
// materializes the tick, before or after a leadership change, computes the
// same start time, while jobs sharing a schedule still spread out.
func Jitter(job string, tick time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(job)) // hash.Hash never returns an error
	var b [9]byte               // a separator byte, then the tick
	binary.BigEndian.PutUint64(b[1:], uint64(tick.UnixNano()))
	_, _ = h.Write(b[:])
	return time.Duration(h.Sum64() % uint64(max))
}
