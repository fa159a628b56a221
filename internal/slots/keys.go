// Package slots is the cluster-wide semaphore that bounds how many runs
// execute at once: a run may only execute while it holds a job slot key
// (slots/<job>/<i>) and one key of each shared resource it names
// (resources/<name>/<i>), all put with the worker's session lease in one
// transaction (SPEC rules 3 to 5). The slot key's CreateRevision is the run's
// fencing token (rule 6).
package slots

import (
	"errors"
	"time"

	"github.com/etcdsched/scheduler/internal/keys"
)

var (
	// ErrFull: every slot of the job, or of one of its resources, is taken.
	ErrFull = errors.New("slots: no free slot")
	// ErrConflict: the caller's own compares failed (for example the queue
	// entry is gone because another worker claimed the run), so nothing was
	// written.
	ErrConflict = errors.New("slots: claim conditions failed")
	// ErrNotOwner: a release found the slot no longer held with this token;
	// it was lost meanwhile and the caller's operations were not applied.
	ErrNotOwner = errors.New("slots: not the owner")
	// ErrLost: the slot was deleted under its holder (lease expired or
	// revoked).
	ErrLost = errors.New("slots: slot lost")
	// ErrReleased: the holder released the slot.
	ErrReleased = errors.New("slots: released")
	// ErrIndeterminate: the response was lost and reading back could not
	// tell what happened before the session (or the caller's context) ended.
	ErrIndeterminate = errors.New("slots: outcome unknown")
)

// Value is what a slot key holds: enough to resolve a claim whose response
// was lost (run id) and to show who runs what (GET /api/v1/slots).
type Value struct {
	RunID       string    `json:"run_id"`
	Holder      string    `json:"holder"`
	StartedAt   time.Time `json:"started_at"`
	ScheduledAt time.Time `json:"scheduled_at"`
}

// Kind tells job slots from shared-resource slots.
type Kind int

const (
	JobSlot Kind = iota
	ResourceSlot
)

// SlotsPrefix is where every job slot key lives.
func SlotsPrefix(prefix string) string { return keys.New(prefix).Slots() }

// ResourcesPrefix is where every shared-resource slot key lives.
func ResourcesPrefix(prefix string) string { return keys.New(prefix).Resources() }

// SlotPrefix holds the slot keys of one job.
func SlotPrefix(prefix, job string) string { return keys.New(prefix).JobSlots(job) }

// ResourcePrefix holds the slot keys of one shared resource.
func ResourcePrefix(prefix, name string) string { return keys.New(prefix).Resource(name) }

// SlotKey is job slot i.
func SlotKey(prefix, job string, i int) string { return keys.New(prefix).Slot(job, i) }

// ResourceKey is slot i of a shared resource.
func ResourceKey(prefix, name string, i int) string { return keys.New(prefix).ResourceSlot(name, i) }

func key(prefix string, kind Kind, name string, i int) string {
	if kind == ResourceSlot {
		return ResourceKey(prefix, name, i)
	}
	return SlotKey(prefix, name, i)
}

// ParseKey splits a slot or resource key into its parts; ok is false for any
// other key.
func ParseKey(prefix, k string) (kind Kind, name string, index int, ok bool) {
	resource, name, index, ok := keys.New(prefix).ParseSlot(k)
	if resource {
		kind = ResourceSlot
	}
	return kind, name, index, ok
}
