package api

import (
	"testing"

	"go.uber.org/goleak"
)

// The limits tests start servers and clients of their own; none of their
// goroutines may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
