package queue

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// A job's cursor (jobs/<job>/cursor) is the last tick a leader wrote for
// it: the tick in runs.TimeFormat, UTC. Every leader, of this version, of
// an older one and of the lean protocol (internal/jobs/assign), reads what
// the others wrote, so the value is spelled here once.

// EncodeCursor is the stored value of a cursor at tick t.
func EncodeCursor(t time.Time) string { return t.UTC().Format(runs.TimeFormat) }

// DecodeCursor reads a cursor's stored value.
func DecodeCursor(value []byte) (time.Time, error) {
	return time.Parse(runs.TimeFormat, string(value))
}

// CursorIs compares the cursor at key with last, the value its writer
// knows, or with its absence when known is false: what makes a second
// leader, or one with a stale view, unable to write a tick twice.
func CursorIs(key string, last time.Time, known bool) clientv3.Cmp {
	if !known {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.Value(key), "=", EncodeCursor(last))
}
