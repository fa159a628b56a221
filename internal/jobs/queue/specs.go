package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
)

// Spec is what a run is scheduled with: its job's spec and the limits the
// writer's config gave the job's resources. It is stored at
// specs/<job>/<ref>, ref a hash of the stored value, so a key's value never
// changes: a spec read once is good for as long as anything refers to it,
// and any writer may write it again. The leader writes it with the first
// entry of the version in its term, a worker or the API with each chained
// or triggered entry; the leader collects the ones nothing refers to any
// more (leader/specs.go).
type Spec struct {
	Job       config.Job      `json:"job"`
	Resources []ResourceLimit `json:"resources,omitempty"`
}

// encode is the spec as stored and its ref: 120 bits of its SHA-256, in
// 20 characters of URL-safe base64.
func (s *Spec) encode() (value, ref string) {
	b, err := json.Marshal(s)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("queue: encode spec: %v", err))
	}
	return string(b), refOf(b)
}

func refOf(value []byte) string {
	sum := sha256.Sum256(value)
	return base64.RawURLEncoding.EncodeToString(sum[:15])
}

// decodeSpec reads the value of a spec key, and checks that it is the
// value its ref names.
func decodeSpec(k keys.Layout, key string, value []byte) (*Spec, error) {
	_, ref, ok := k.ParseSpec(key)
	if !ok {
		return nil, fmt.Errorf("queue: %s is not a spec key", key)
	}
	if got := refOf(value); got != ref {
		return nil, fmt.Errorf("queue: spec %s holds a value whose ref is %s", key, got)
	}
	var s Spec
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, fmt.Errorf("queue: decode spec %s: %w", key, err)
	}
	return &s, nil
}

// ErrSpecMissing: an entry refers to a spec that is not in etcd.
var ErrSpecMissing = errors.New("job spec not in etcd")

// Specs is every replica's copy of specs/, by key, each spec decoded once
// (a key's value never changes), shared by the entries that refer to it
// (callers must not change what its maps and slices hold). What the copy
// has not seen yet, Resolve reads from etcd: the spec is written in the
// transaction of the first entry that refers to it, or before, but the two
// prefixes are watched apart. Subscribers (the queue view) are told of
// each spec that arrives.
type Specs struct {
	*mirror.Map[string, *Spec]
	keys   keys.Layout
	client *clientv3.Client
}

// NewSpecs is an empty copy; mirror.Run fills it, client reads what it
// lacks.
func NewSpecs(layout keys.Layout, client *clientv3.Client, log *slog.Logger) *Specs {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := mirror.NewMap(func(key string) (string, bool) { return key, true }, func(kv *mvccpb.KeyValue, prev *Spec, had bool) (*Spec, bool) {
		if had {
			return prev, true // written again: the same value
		}
		sp, err := decodeSpec(layout, string(kv.Key), kv.Value)
		if err != nil {
			log.Warn("ignoring unreadable job spec", "key", string(kv.Key), "err", err)
			return nil, false
		}
		return sp, true
	})
	return &Specs{Map: m, keys: layout, client: client}
}

// lookup is the spec at key if the copy has it.
func (s *Specs) lookup(key string) *Spec {
	sp, _ := s.Get(key)
	return sp
}

// Resolve returns it with its spec: as it is when resolved, from the copy,
// or else read from etcd. The error wraps ErrSpecMissing when etcd has no
// such spec; a run must not start then.
func (s *Specs) Resolve(ctx context.Context, it *Item) (*Item, error) {
	if it.Resolved() {
		return it, nil
	}
	key := it.SpecKey(s.keys)
	sp := s.lookup(key)
	if sp == nil {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("queue: read spec of %s: %w", it.RunID, err)
		}
		if len(resp.Kvs) == 0 {
			return nil, fmt.Errorf("queue: run %s: %w: %s", it.RunID, ErrSpecMissing, key)
		}
		if sp, err = decodeSpec(s.keys, key, resp.Kvs[0].Value); err != nil {
			return nil, err
		}
		sp, _ = s.Store(key, sp)
	}
	return &Item{Entry: it.withSpec(sp), Key: it.Key, ModRev: it.ModRev}, nil
}

// DedupSpecs drops from ops every write of a spec after the first: one
// transaction may write the same spec more than once (the ticks of one job
// in a batch, the chained runs of one job after several missed ticks), and
// etcd refuses a transaction that puts a key twice. The writes are of the
// same value, so one is all of them.
func DedupSpecs(k keys.Layout, ops []clientv3.Op) []clientv3.Op {
	seen := map[string]bool{}
	out := make([]clientv3.Op, 0, len(ops))
	for _, op := range ops {
		if IsSpec(k, op) {
			key := string(op.KeyBytes())
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, op)
	}
	return out
}

// SpecKeys are the keys of the specs ops write.
func SpecKeys(k keys.Layout, ops []clientv3.Op) []string {
	var out []string
	for _, op := range ops {
		if IsSpec(k, op) {
			out = append(out, string(op.KeyBytes()))
		}
	}
	return out
}

// IsSpec reports whether op writes a spec: a chained run recorded skipped
// (package follow) hoists its specs out of its nested transaction.
func IsSpec(k keys.Layout, op clientv3.Op) bool {
	return op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), k.Specs())
}
