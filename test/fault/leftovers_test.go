package fault

import (
	"strings"
	"testing"
	"time"
)

// An assignment or slot past its bound is reported; one within it, or none, is not.
func TestLeftovers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &History{
		Jobs:       []Job{{Name: "j", Every: time.Second, StartingDeadline: 30 * time.Second}},
		SessionTTL: 2 * time.Second, LongestRun: 6 * time.Second, Now: t0.Add(time.Minute),
	}
	for _, tc := range []struct {
		name string
		left []Left
		want string
	}{
		{"none", nil, ""},
		{"within its bound", []Left{{Key: "/fault/assign/a.1/x/g", At: t0.Add(20 * time.Second)}}, ""},
		{"past it", []Left{{Key: "/fault/assign/a.1/x/g", At: t0.Add(5 * time.Second)}}, "leftovers: /fault/assign/a.1/x/g"},
		{"a slot within its bound", []Left{{Key: "/fault/slots/j/0", At: t0.Add(20 * time.Second)}}, ""},
		{"a slot past it", []Left{{Key: "/fault/slots/j/0", At: t0.Add(5 * time.Second)}}, "leftovers: /fault/slots/j/0"},
	} {
		h.Left = tc.left
		r := &Report{}
		checkLeftovers(h, r)
		got := strings.Join(r.Violations, "\n")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
