package runs

import "testing"

// A chained run's id names its upstream, and still starts with its own job:
// JobOf (and so every key derived from the id) finds the downstream job.
func TestChainID(t *testing.T) {
	up := "extract@2026-11-22T01:00:00Z"
	id := ChainID("transform", up)
	if id != "transform@chain-extract@2026-11-22T01:00:00Z" {
		t.Errorf("ChainID = %q", id)
	}
	if got := JobOf(id); got != "transform" {
		t.Errorf("JobOf(%q) = %q, want transform", id, got)
	}
	if twice := ChainID("load", id); JobOf(twice) != "load" {
		t.Errorf("JobOf(%q) = %q, want load", twice, JobOf(twice))
	}
}
