// Package shed reads chunk records: the records of ticks due at one
// instant that a worker shed together, one key for many ticks
// (docs/design-shed.md). Every history reader that answers for a
// scheduled tick reads them beside the tick's record of its own, through
// here, so they agree on what a chunk record says.
package shed

import (
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Chunk is one chunk record, the key it is stored at and its revisions.
type Chunk struct {
	Key string
	// Rev is the key's mod revision, which a rewrite or delete of it
	// compares; Created its create revision, when its ticks were recorded:
	// the prune takes ticks out of a chunk record by rewriting it (the
	// leader's prune, docs/design-shed.md), which must not make the ticks
	// left look recorded later.
	Rev, Created int64
	runs.ChunkRecord
}

// Unreadable is a key under shed/ whose value is not a chunk record any
// writer writes; At is its instant as the key spells it (zero when the key
// does not parse either). A reader counts every tick due at At as possibly
// in it.
type Unreadable struct {
	Key string
	At  time.Time
	Err error
}

// errKeyNotInstant: a chunk record whose key does not name the instant its
// value says.
var errKeyNotInstant = errors.New("shed: the key does not name the chunk record's instant")

// Between is the read of the chunk records of the ticks due in [from, to),
// to send alone or in a transaction beside other reads.
func Between(k keys.Layout, from, to time.Time) clientv3.Op {
	start, end := k.ShedBetween(from, to)
	return clientv3.OpGet(start, clientv3.WithRange(end))
}

// At is the read of the chunk records of the ticks due at instant.
func At(k keys.Layout, instant time.Time) clientv3.Op {
	return clientv3.OpGet(k.ShedAt(instant), clientv3.WithPrefix())
}

// Decode reads what Between or At returned, in key order (by instant).
func Decode(k keys.Layout, kvs []*mvccpb.KeyValue) (chunks []Chunk, bad []Unreadable) {
	for _, kv := range kvs {
		at, _, _, _, keyOK := k.ParseShedRecord(string(kv.Key))
		c, err := runs.DecodeChunkRecord(kv.Value)
		switch {
		case err != nil:
			bad = append(bad, Unreadable{Key: string(kv.Key), At: at, Err: err})
		case !keyOK || !c.At.Equal(at):
			bad = append(bad, Unreadable{Key: string(kv.Key), At: at, Err: errKeyNotInstant})
		default:
			chunks = append(chunks, Chunk{Key: string(kv.Key), Rev: kv.ModRevision, Created: kv.CreateRevision, ChunkRecord: c})
		}
	}
	return chunks, bad
}
