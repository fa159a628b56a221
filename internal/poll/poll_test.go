package poll

import (
	"fmt"
	"testing"
	"time"
)

// fatalT keeps Fatalf's message and unwinds with a panic the test
// recovers, so the test can read what a failed wait says.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	Until(t, time.Minute, "third look", func() (bool, string) { n++; return n == 3, "" })
	if n != 3 {
		t.Fatalf("looked %d times, want 3", n)
	}
}

func TestUntilFailsPastTheDeadlineWithTheLastReason(t *testing.T) {
	f := &fatalT{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				panic(r)
			}
		}()
		Until(f, 30*time.Millisecond, "never", func() (bool, string) { return false, "still no" })
		t.Fatal("Until returned on a condition that never held")
	}()
	if want := "never: not within 30ms: still no"; f.msg != want {
		t.Fatalf("message %q, want %q", f.msg, want)
	}
}

func TestWithinSaysWhetherTheConditionHeld(t *testing.T) {
	n := 0
	if !Within(time.Minute, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Within on a condition true at the third look: looked %d times", n)
	}
	start := time.Now()
	if Within(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Within said a condition that never held did")
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("Within gave up after %s, before its 30ms", waited)
	}
}
