package target

import (
	"os"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat       string
		state      byte
		ppid, pgrp int
		ok         bool
	}{
		{"1234 (sleep) S 1 1230 1230 0 -1 4194304", 'S', 1, 1230, true},
		// comm is the program's choice: spaces and parentheses included.
		{"1234 (a) Z 9 (b) R 1 77 77 0", 'R', 1, 77, true},
		{"1234 (x y) Z 1 42 42", 'Z', 1, 42, true},
		{"1234 (broken", 0, 0, 0, false},
		{"1234 (x) S 1", 0, 0, 0, false},
	}
	for _, tt := range tests {
		state, ppid, pgrp, ok := parseStat([]byte(tt.stat))
		if state != tt.state || ppid != tt.ppid || pgrp != tt.pgrp || ok != tt.ok {
			t.Errorf("parseStat(%q) = %c, %d, %d, %v; want %c, %d, %d, %v",
				tt.stat, state, ppid, pgrp, ok, tt.state, tt.ppid, tt.pgrp, tt.ok)
		}
	}
}

func TestGroupMembersFindsOwnGroup(t *testing.T) {
	pgid, pid := syscall.Getpgrp(), os.Getpid()
	found := false
	for _, p := range groupMembers(pgid) {
		found = found || p == pid
	}
	if !found {
		t.Errorf("groupMembers(%d) misses this process %d", pgid, pid)
	}
}
