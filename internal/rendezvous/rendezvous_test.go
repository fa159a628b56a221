package rendezvous

import (
	"fmt"
	"slices"
	"testing"
)

// Top ranks as Pick does: its first is Pick's, and it holds k distinct
// members (all of them when they are fewer).
func TestTopRanksAsPick(t *testing.T) {
	members := []string{"r1", "r2", "r3", "r4", "r5"}
	firsts := map[string]int{}
	for i := range 500 {
		key := fmt.Sprintf("2026-12-01T00:%02d:%02dZ", i/60, i%60)
		top := Top(members, key, 3)
		if len(top) != 3 || top[0] != Pick(members, key) {
			t.Fatalf("Top(%q) = %v, Pick %q", key, top, Pick(members, key))
		}
		if len(slices.Compact(slices.Sorted(slices.Values(top)))) != 3 {
			t.Fatalf("Top(%q) = %v: a member twice", key, top)
		}
		firsts[top[0]]++
	}
	for _, m := range members {
		if firsts[m] < 60 || firsts[m] > 140 {
			t.Errorf("%s first for %d of 500 keys, want about 100: %v", m, firsts[m], firsts)
		}
	}
	if all := Top(members[:2], "k", 3); len(all) != 2 {
		t.Errorf("Top of two for 3: %v", all)
	}
}
