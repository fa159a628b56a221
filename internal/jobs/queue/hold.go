package queue

import (
	"bytes"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Hold is a slot a failed attempt kept for its retry (retries.hold_slot):
// the slot keys stay, on the holder's session lease, and the retry's
// pending entry says which they are, so only that holder claims the retry,
// with them, and nothing else starts in between. When the holder's lease
// ends the keys go with it (docs/design.md#the-safety-rules, rule 7) and the retry claims like any run.
type Hold struct {
	Holder    string         `json:"holder"`
	Lease     int64          `json:"lease"`
	Slot      int            `json:"slot"`
	Token     int64          `json:"token"` // the keys' CreateRevision
	Resources []HeldResource `json:"resources,omitempty"`
}

// HeldResource is a resource slot a hold keeps.
type HeldResource struct {
	Name  string `json:"name"`
	Index int    `json:"index"`
}

// Token is the fencing token of a running entry: its ModRevision, or the
// kept slot's token when the attempt ran on a held slot.
func (q *Item) Token() int64 {
	if q.HeldToken != 0 {
		return q.HeldToken
	}
	return q.ModRev
}

// Holding is the ops of follow.End for an attempt whose slot is kept for
// its retry: when they write a retry, the retry's entry carries hold. The
// ops are End's, with the retry's put replaced.
func Holding(ops []clientv3.Op, entryKey string, retry *Entry, hold Hold) []clientv3.Op {
	if retry == nil {
		return ops
	}
	held := *retry
	held.Hold = &hold
	out := make([]clientv3.Op, len(ops))
	for i, op := range ops {
		if op.IsPut() && bytes.Equal(op.KeyBytes(), []byte(entryKey)) {
			op = clientv3.OpPut(entryKey, held.Encode())
		}
		out[i] = op
	}
	return out
}
