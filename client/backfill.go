package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/etcdsched/scheduler/internal/wire"
)

// BackfillTimeout bounds a backfill request: the server gives its etcd
// work 60s (up to 10,000 ticks), and the answer needs room to travel.
const BackfillTimeout = 70 * time.Second

// Backfilled is the answer of a backfill: what became of every tick of
// [From, To), by run id.
type Backfilled struct {
	wire.Backfill
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the answer in Raw.
func (b *Backfilled) UnmarshalJSON(data []byte) error { return keepRaw(data, &b.Backfill, &b.Raw) }

// Backfill queues the job's past ticks in [from, to) that never ran nor
// were queued (docs/operations.md#backfilling).
func (c *Client) Backfill(ctx context.Context, job string, from, to time.Time) (Backfilled, error) {
	long := *c // the same transport, a longer bound
	long.timeout = max(c.timeout, BackfillTimeout)
	body := wire.BackfillBody{From: from.Format(time.RFC3339Nano), To: to.Format(time.RFC3339Nano)}
	var out Backfilled
	_, err := long.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(job)+"/backfill", nil, body, &out)
	return out, err
}
