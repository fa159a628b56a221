package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/etcdsched/scheduler/internal/wire"
)

// AppliedConfig is GET /api/v1/config: the config the answering replica
// applies, defaults filled in, without secrets or per-replica settings, with
// its hash and when it was applied. Secrets holds fingerprints of the
// secret values, and only for a client with the API token (see
// config.SecretFingerprints).
type AppliedConfig struct {
	wire.Config
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the answer in Raw.
func (a *AppliedConfig) UnmarshalJSON(b []byte) error { return keepRaw(b, &a.Config, &a.Raw) }

// Config returns the config the answering replica applies.
func (c *Client) Config(ctx context.Context) (AppliedConfig, error) {
	var out AppliedConfig
	_, err := c.do(ctx, http.MethodGet, "/api/v1/config", nil, nil, &out)
	return out, err
}
