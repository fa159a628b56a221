package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash is a short fingerprint of the parsed configuration, shown per
// member so that a replica still running an older file stands out. It
// hashes the decoded values, not the bytes, so comments, key order and
// spelled-out defaults do not count as drift.
func (c *Config) Hash() string {
	// encoding/json writes struct fields in declaration order and map keys
	// sorted, so equal configs encode identically. Marshal cannot fail on
	// these types (no channels, funcs or cyclic values).
	b, err := json.Marshal(c)
	if err != nil {
		return "unhashable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}
