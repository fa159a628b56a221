package main

import (
	"strings"
	"testing"
)

// A run refuses to start on a disk without room for its etcd data, and
// says where and what to remove; with room it starts.
func TestFreeSpaceRefusesAFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := freeSpace(dir, 0); err != nil {
		t.Errorf("needing nothing: %v", err)
	}
	err := freeSpace(dir, 1<<62)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "-keep") {
		t.Errorf("needing 4 EiB: %v, want an error naming %s and -keep directories", err, dir)
	}
}
