package main

import (
	"os"
	"path/filepath"
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

// -dir may name a directory that does not exist yet (the README's
// `-keep -dir /tmp/bench`): it is made, not refused.
func TestWorkDirMakesANewDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	got, cleanup, err := workDir(dir, true, 0)
	if err != nil {
		t.Fatalf("workDir(%s): %v", dir, err)
	}
	defer cleanup()
	if st, err := os.Stat(got); got != dir || err != nil || !st.IsDir() {
		t.Errorf("workDir(%s) = %s (%v), want the directory made", dir, got, err)
	}
	if _, _, err := workDir(dir, true, 1<<62); err == nil {
		t.Errorf("workDir needing 4 EiB: no error")
	}
}
