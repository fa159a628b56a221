package wire

import (
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Config is the JSON answer of GET /api/v1/config: the config the
// answering replica applies, without secrets or per-replica settings
// (config.Public), its hash (the config_hash of /api/v1/members) and when
// it was applied.
type Config struct {
	ConfigHash string        `json:"config_hash"`
	AppliedAt  time.Time     `json:"applied_at"`
	Config     config.Public `json:"config"`
	// Secrets fingerprints each secret value by its path, keyed with the
	// API token (config.SecretFingerprints); only a request that carries
	// the token gets them (null otherwise, {} when there are none), and
	// never the values.
	Secrets map[string]string `json:"secrets"`
}
