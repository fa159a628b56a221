package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
)

// Hash is a short fingerprint of what every replica of a cluster must
// share, shown per member so that a replica still running an older file
// stands out. It hashes the decoded values, not the bytes, so comments, key
// order and spelled-out defaults do not count as drift, and it leaves out
// per-replica settings (see Shared), so replicas started from one file with
// their own --listen, --data-dir or etcd endpoints show one hash.
//
// Header and env values do not count (see below), so rotating a token in a
// headers_file does not show up as drift.
//
// The JSON goes into the hash a job at a time: encoding the whole config at
// once built one buffer as large as the encoding (163 MB of allocations at
// 100,000 jobs, measured by test/bench).
func (c *Config) Hash() string {
	h := sha256.New()
	top := c.Shared()
	top.Jobs = nil
	// encoding/json writes struct fields in declaration order and map keys
	// sorted, so equal configs encode identically. Encode cannot fail on
	// these types (no channels, funcs or cyclic values).
	if !encodeInto(h, &top) {
		return "unhashable"
	}
	for i := range c.Jobs {
		// Header and env values are left out: the hash is shown to
		// anyone who may read the API, and a short hash of a config an
		// attacker otherwise knows would let them test guesses of a
		// secret offline. Names and the files' paths still count.
		j := c.Jobs[i].Redacted()
		if !encodeInto(h, &j) {
			return "unhashable"
		}
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum)[:12]
}

// Shared is a shallow copy of c without the settings each replica may set
// for itself: where it listens and finds its token, where it keeps its
// data, how it reaches etcd, how much it runs at once and how long it
// waits on shutdown. Everything else, including any field added later
// unless it is cleared here, is what replicas must agree on and counts as
// drift (docs/design-edges.md lists both sides).
func (c *Config) Shared() Config {
	s := *c
	s.API.Listen = ""
	s.API.TokenFile = ""
	s.Cluster.DataDir = ""
	prefix := s.Cluster.Etcd.Prefix
	s.Cluster.Etcd = Etcd{Prefix: prefix}
	s.Worker.MaxParallel = 0
	s.Worker.ShutdownGrace = 0
	return s
}

func encodeInto(h hash.Hash, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	h.Write(b)
	return true
}
