// Package poll waits, in tests, for a condition that has no event to wait
// on: it looks again every few milliseconds and fails the test once the
// deadline passes. The deadline is what a test states; the interval only
// bounds how late the wait notices.
package poll

import (
	"testing"
	"time"
)

// interval between two looks at a condition.
const interval = 10 * time.Millisecond

// Until waits until cond holds. Past within, the test fails with what and
// cond's last explanation of why it does not hold yet.
func Until(t testing.TB, within time.Duration, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if why != "" {
				why = ": " + why
			}
			t.Fatalf("%s: not within %s%s", what, within, why)
		}
		time.Sleep(interval)
	}
}

// Within waits until cond holds or within passes and says which, for a
// test that has more to check after the wait either way (a hammer whose
// bounds must be checked even when the evidence it waited for never came).
func Within(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// For is Until for a condition with nothing more to say.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, within, what, func() (bool, string) { return cond(), "" })
}
