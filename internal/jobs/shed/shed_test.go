package shed

import (
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Decode hands back every chunk record it can read, and every other key
// under shed/ as unreadable with the instant its key names: a record whose
// value cannot be read, or whose key names another instant than its value
// (a reader answering a tick from it would answer for the wrong instant).
func TestDecodeKeepsWhatItCannotReadApart(t *testing.T) {
	k := keys.New("/s/")
	at := time.Date(2026, 12, 4, 5, 0, 1, 0, time.UTC)
	rec := func(at time.Time) []byte {
		c := runs.ChunkRecord{At: at, EndedAt: at.Add(time.Second), Runs: []runs.ShedRun{{Job: "a", Outcome: runs.Missed}}}
		return []byte(runs.EncodeChunkRecord(&c))
	}
	kvs := []*mvccpb.KeyValue{
		{Key: []byte(k.ShedRecord(at, "w", "g", 0)), Value: rec(at)},
		{Key: []byte(k.ShedRecord(at, "w", "g", 1)), Value: []byte("{torn")},
		{Key: []byte(k.ShedRecord(at, "w", "g", 2)), Value: rec(at.Add(time.Second))},
		{Key: []byte(k.ShedAt(at) + "w/g"), Value: rec(at)},
	}
	chunks, bad := Decode(k, kvs)
	if len(chunks) != 1 || chunks[0].Key != string(kvs[0].Key) || !chunks[0].At.Equal(at) {
		t.Fatalf("chunks %+v, want the first key's only", chunks)
	}
	if len(bad) != 3 {
		t.Fatalf("unreadable %+v, want the other three", bad)
	}
	for i, u := range bad[:2] {
		if u.Key != string(kvs[i+1].Key) || !u.At.Equal(at) || u.Err == nil {
			t.Errorf("unreadable %d: %+v, want key %s at %s", i, u, kvs[i+1].Key, at)
		}
	}
	if !errors.Is(bad[1].Err, errKeyNotInstant) {
		t.Errorf("a record under another instant's key: %v, want errKeyNotInstant", bad[1].Err)
	}
	if !bad[2].At.IsZero() {
		t.Errorf("a key that does not parse: instant %s, want none", bad[2].At)
	}
}
