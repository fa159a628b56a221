package slots

import "time"

// Value is what a slot key holds: enough to resolve a claim whose response
// was lost (run id) and to show who runs what (GET /api/v1/slots).
type Value struct {
	RunID       string    `json:"run_id"`
	Holder      string    `json:"holder"`
	StartedAt   time.Time `json:"started_at"`
	ScheduledAt time.Time `json:"scheduled_at"`
}
