package slots

import "github.com/etcdsched/scheduler/internal/keys"

// Kind tells job slots from shared-resource slots.
type Kind int

const (
	JobSlot Kind = iota
	ResourceSlot
)

// slotKey is slot i of the job group or shared resource name.
func slotKey(l keys.Layout, kind Kind, name string, i int) string {
	if kind == ResourceSlot {
		return l.ResourceSlot(name, i)
	}
	return l.Slot(name, i)
}

// parseKey splits a slot or resource key into its parts; ok is false for
// any other key.
func parseKey(l keys.Layout, k string) (kind Kind, name string, index int, ok bool) {
	resource, name, index, ok := l.ParseSlot(k)
	if resource {
		kind = ResourceSlot
	}
	return kind, name, index, ok
}
