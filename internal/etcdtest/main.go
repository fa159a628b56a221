package etcdtest

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/etcdsched/scheduler/internal/target"
)

// Main is the TestMain of a package whose tests run the scheduling stack:
// exec runs re-execute the test binary as their supervisor, as the
// scheduler's main does, and no goroutine may outlive the tests but those
// of the etcd client's watch streams and net/http's idle connection pools,
// which live as long as the binary.
func Main(m *testing.M) {
	if code, ok := target.Supervise(os.Args); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, watchStreams,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// VerifyNoLeaks is the TestMain of a package whose tests talk to etcd but
// serve or call no HTTP: no goroutine may outlive the tests but the etcd
// client's watch streams.
func VerifyNoLeaks(m *testing.M) { goleak.VerifyTestMain(m, watchStreams) }

// watchStreams are the etcd client's watch streams, which live as long as
// the test binary.
var watchStreams = goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run")
