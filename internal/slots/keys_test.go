package slots

import "testing"

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key   string
		kind  Kind
		name  string
		index int
		ok    bool
	}{
		{SlotKey(testPrefix, "nightly-report", 0), JobSlot, "nightly-report", 0, true},
		{SlotKey(testPrefix, "a.b_c", 12), JobSlot, "a.b_c", 12, true},
		{ResourceKey(testPrefix, "github-api", 4), ResourceSlot, "github-api", 4, true},
		{testPrefix + "slots/job", 0, "", 0, false},
		{testPrefix + "slots//1", 0, "", 0, false},
		{testPrefix + "slots/job/01", 0, "", 0, false},
		{testPrefix + "slots/job/-1", 0, "", 0, false},
		{testPrefix + "queue/job/1", 0, "", 0, false},
		{"/other/slots/job/1", 0, "", 0, false},
	} {
		kind, name, index, ok := ParseKey(testPrefix, tc.key)
		if ok != tc.ok || ok && (kind != tc.kind || name != tc.name || index != tc.index) {
			t.Errorf("ParseKey(%q) = %v %q %d %v, want %v %q %d %v", tc.key, kind, name, index, ok, tc.kind, tc.name, tc.index, tc.ok)
		}
	}
	if SlotPrefix(testPrefix, "a") == SlotPrefix(testPrefix, "ab")[:len(SlotPrefix(testPrefix, "a"))] {
		t.Error("the prefix of job a also covers job ab")
	}
}
