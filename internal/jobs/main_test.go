package jobs_test

import (
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// TestMain checks that no goroutine outlives the package's tests. The
// tests that wait on real seconds (ticks every second, a lease's expiry)
// and use under a fifth of a core call t.Parallel: most of their time is
// waiting, so -parallel (GOMAXPROCS) of them wait together. They share
// nothing but the process: each starts its own etcd, nodes and targets.
func TestMain(m *testing.M) { etcdtest.Main(m) }
