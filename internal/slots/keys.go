package slots

import "github.com/etcdsched/scheduler/internal/keys"

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
