package config

import "testing"

func TestNearestJob(t *testing.T) {
	c := &Config{Jobs: []Job{{Name: "nightly"}, {Name: "nightly-report"}, {Name: "sync"}, {Name: "backup"}}}
	for _, tc := range []struct{ name, want string }{
		{"nihgtly", "nightly"},  // two letters swapped
		{"nightlyy", "nightly"}, // one too many
		{"nightly-reprot", "nightly-report"},
		{"snyc", "sync"},
		{"bakcup", "backup"},
		{"report", ""}, // another name, not a slip
		{"x", ""},
		{"weekly", ""},
	} {
		if got := c.NearestJob(tc.name); got != tc.want {
			t.Errorf("NearestJob(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
