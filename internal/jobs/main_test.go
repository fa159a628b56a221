package jobs_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/internal/target"
)

func TestMain(m *testing.M) {
	// As in the scheduler's main: exec runs re-execute this test binary as
	// their supervisor.
	if code, ok := target.Supervise(os.Args); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"),
		// net/http's idle connection pools live for the test binary's lifetime.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
