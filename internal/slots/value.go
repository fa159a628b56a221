package slots

import (
	"time"

	"github.com/etcdsched/scheduler/internal/jsonappend"
)

// Value is what a slot key holds: enough to resolve a claim whose response
// was lost (run id) and to show who runs what (GET /api/v1/slots).
type Value struct {
	RunID       string    `json:"run_id"`
	Holder      string    `json:"holder"`
	StartedAt   time.Time `json:"started_at"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// Encode is v as a slot key holds it: what encoding/json writes, without
// its reflection (a claim encodes one per run).
func (v Value) Encode() []byte {
	b := make([]byte, 0, 32+len(v.RunID)+len(v.Holder)+2*len(time.RFC3339Nano))
	b = append(b, '{')
	b = jsonappend.String(jsonappend.Field(b, "run_id"), v.RunID)
	b = jsonappend.String(jsonappend.Field(b, "holder"), v.Holder)
	b = jsonappend.Time(jsonappend.Field(b, "started_at"), v.StartedAt)
	b = jsonappend.Time(jsonappend.Field(b, "scheduled_at"), v.ScheduledAt)
	return append(b, '}')
}
